"""autorl campaigns: run matrices of runs, store their results, compare them with statistics."""
