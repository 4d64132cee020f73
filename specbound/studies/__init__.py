"""Questions asked of several profiles: comparisons, the random twin, the scaling study, and the
resumable, parallel execution of batches of models or runs.

Reads the core and the I/O layer.
"""
