"""lessons: the notebooks' helpers, one module per notebook topic (plots, widgets, lesson data).

The top room: may import every other room (bench, classroom, checking, problems, emu,
runtime); nothing imports it. Notebooks call these so their cells stay short.
"""
