"""The live coding load the console plots: a worker process that keeps prompts in flight, its windows,
the A/B of one configuration after another, and the runs it records.
"""
