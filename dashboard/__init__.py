"""The Streamlit layer of specbound: caches, the shared sidebar, p controls and shared wording.

Pages in ``pages/`` stay thin: widgets, one cached call into this package, a figure or a table.
Nothing in :mod:`specbound` imports from here.
"""
