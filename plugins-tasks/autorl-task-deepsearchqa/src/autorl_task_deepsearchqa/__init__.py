"""DeepSearchQA for autorl: multi-hop questions answered with search[...] and answer[...]."""
