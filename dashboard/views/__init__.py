"""What a page shows, built in one call from the page's choices: its figures, tables and sentences.

A page with a report is drawn in three steps: its widgets give the choices; one call here builds the
view (a frozen dataclass); the page renders the view, and its HTML report is the same view
(``view.report()``), so a figure or a table is made once and the report cannot drift from the page.
Views draw nothing and never import Streamlit (a test holds them to it): they are tested without a
browser, on real analyses.

- :mod:`~dashboard.views.bounds`: the Bound explorer at one p assignment;
- :mod:`~dashboard.views.compare`: the open model against its baseline;
- :mod:`~dashboard.views.spectra`: singular-value profiles, head heatmaps, the matrix table;
- :mod:`~dashboard.views.why`: why p* takes the values it takes;
- :mod:`~dashboard.views.common`: what they share (the report's heading, clickable heatmap cells).
"""
