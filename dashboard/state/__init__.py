"""What a session holds: its model (the one owner), the caches behind it, its baseline, its atlas,
the link that reproduces its view, presentation mode and the upload store.
"""
