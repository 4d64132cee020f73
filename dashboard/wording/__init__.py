"""How the dashboard says things: shared wording, the one number format and the vocabulary
that explains every symbol.
"""
