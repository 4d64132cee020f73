"""How results are shown: numbers in words, the explanations, the JSON and text report, the figures.

Reads every layer below it; nothing below reads it.
"""
