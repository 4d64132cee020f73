"""Where weights and profiles come from and go to: model names, checkpoints of every family, LoRA
adapters, references, the profile cache, atlases and safe files; the loader from a name to a profile.

Reads only the core below it.
"""
