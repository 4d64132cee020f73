"""The Streamlit layer of specbound, in five groups and the boundary around them.

- :mod:`dashboard.state`: what a session holds (its model, with :mod:`~dashboard.state.session` its one
  owner; the caches behind it; its baseline, its atlas, the link to its view);
- :mod:`dashboard.widgets`: what the pages draw with (the sidebar and its atlas source, the p controls,
  drill-downs, tables, exports, the page look);
- :mod:`dashboard.services`: the data of the pages that need more than the session's model (the Lab,
  the Training runs, Scaling, Theory); they draw only the progress of their own long work (the Lab's
  training panel, the Scaling study's summarising and downloads);
- :mod:`dashboard.views`: what a page with a report shows, built in one call from its widgets' choices
  (figures, tables, sentences); the page draws the view and the report is the same view;
- :mod:`dashboard.wording`: how things are said (shared wording, the number format, the totals in
  words, the vocabulary);
- :mod:`dashboard.safety` (what a visitor may make the server do), :mod:`dashboard.routing` and
  :mod:`dashboard.serve` (starting the server) beside them.

Pages in ``pages/`` stay thin: widgets, one call into this package (a cached state, a service or a
view), then what it returned, drawn.
Nothing in :mod:`specbound` imports from here.
"""
