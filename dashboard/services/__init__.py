"""One module of data per page that needs more than the session's model: the Lab (and its
training jobs), the Training runs, the Scaling study and the Theory page's live numbers. Each reads
the package and the session state, caches, and draws nothing (a long task writes its progress into a
placeholder its page hands it).
"""
