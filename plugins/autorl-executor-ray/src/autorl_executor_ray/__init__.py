"""autorl executor ``ray``: each campaign cell a Ray task holding its CPU and GPU slots.

Nothing here imports Ray: the hookimpl module is loaded by every ``autorl`` command, and
:mod:`autorl_executor_ray.executor` imports Ray only when a job runs.
"""
