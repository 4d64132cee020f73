"""How the dashboard says things: shared wording, the one number format, the totals in words and the
vocabulary that explains every symbol.
"""
