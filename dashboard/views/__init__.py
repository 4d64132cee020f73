"""What a page shows, built in one call from the page's choices: its figures, tables and sentences.

A page with a report is drawn in three steps: its widgets give the choices; one call here builds the
view (a frozen dataclass); the page draws the view, and its HTML report is the same view
(``view.report()``): each figure is made once, and the report holds the very figure the page draws.
A report's tables are the full tables behind the page's (as the CSV downloads hold them: every
column, empty cells empty), where the page may show fewer columns or words in empty cells. Views draw
nothing and load no Streamlit (a test holds them to it), so they are tested on real analyses without
a browser or a session.

- :mod:`~dashboard.views.bounds`: the Bound explorer at one p assignment;
- :mod:`~dashboard.views.compare`: the open model against its baseline;
- :mod:`~dashboard.views.spectra`: singular-value profiles, head heatmaps, the matrix table;
- :mod:`~dashboard.views.why`: why p* takes the values it takes;
- :mod:`~dashboard.views.runs`: a training run and one of its saved steps (the Training runs page,
  which offers no report but is drawn the same way);
- :mod:`~dashboard.views.lab`: the Lab page's two views, one run at one of its saved steps and a sweep
  (its measures against the gap, its verdicts, the robust view, the grokking runs), its tables as the
  page shows them in :mod:`~dashboard.views.lab_tables`;
- :mod:`~dashboard.views.scaling`: one growth study, for the proxies shown;
- :mod:`~dashboard.views.theory`: the Theory page's playground of a synthetic spectrum;
- :mod:`~dashboard.views.common`: what they share (the report's heading, clickable heatmap cells).
"""
