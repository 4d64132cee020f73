"""The Streamlit layer of specbound, in four groups and the boundary around them.

- :mod:`dashboard.state`: what a session holds (its model, with :mod:`~dashboard.state.session` its one
  owner; the caches behind it; its baseline, its atlas, the link to its view);
- :mod:`dashboard.widgets`: what the pages draw with (the sidebar and its atlas source, the p controls,
  drill-downs, tables, exports, the page look);
- :mod:`dashboard.services`: the data of the pages that need more than the session's model (the Lab,
  the Training runs, Scaling, Theory); they draw only the progress of their own long work (the Lab's
  training panel, the Scaling study's summarising and downloads);
- :mod:`dashboard.wording`: how things are said (shared wording, the number format, the vocabulary);
- :mod:`dashboard.safety` (what a visitor may make the server do), :mod:`dashboard.routing` and
  :mod:`dashboard.serve` (starting the server) beside them.

Pages in ``pages/`` stay thin: widgets, one cached call into this package, a figure or a table.
Nothing in :mod:`specbound` imports from here.
"""
