"""The machine under the server: GPUs (NVML), host CPU and memory, and GPU sets for parallel lanes.
"""
