"""The numbers: shapes, limits, linear algebra, spectra, profiles and the bound's terms.

Nothing here reads a file, touches the network or draws: a layer's weights go in, singular values,
norms and the proxies come out. The lowest layer of the package; it imports nothing above it
(``tests/test_layers.py`` holds every layer to that).
"""
