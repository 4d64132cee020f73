"""The Streamlit layer of specbound, in layers: each imports its own and those below it, never one above.

From the bottom (:data:`LAYERS`; ``tests/dashboard/test_dashboard_layers.py`` fails on any import that points
up, inside a function too):

- :mod:`dashboard.wording`: how things are said (shared wording, the number format, the totals in
  words, the vocabulary, the Lab page's methods computed from the lab's constants);
- :mod:`dashboard.views`: what a page shows, built in one call from its widgets' choices (figures,
  tables as plain or styled frames, sentences); the page draws the view and a report is the same view.
  Like the wording, plain Python: neither loads Streamlit;
- :mod:`dashboard.safety` (what a visitor may make the server do), above the one place uploads are
  kept (:mod:`dashboard.state.upload_store`), which both it and the atlas source need;
- :mod:`dashboard.state`: what a session holds (its model, with :mod:`~dashboard.state.session` its
  one owner; the caches behind it; its baseline, its atlas, the link to its view; the pages' own
  choices and messages, :mod:`~dashboard.state.choices` their one writer);
- :mod:`dashboard.services`: the data of the pages that need more than the session's model (the Lab,
  the Training runs, Scaling, Theory), cached, and the Lab's training jobs; they draw nothing (a long
  task writes its progress into a placeholder the page hands it);
- :mod:`dashboard.widgets`: what the pages draw with (the sidebar and its atlas source, the p controls,
  drill-downs, tables, exports, the page look, the Lab's progress panel and "Open as a model");
- :mod:`dashboard.routing` and :mod:`dashboard.serve` (starting the server), the boundary;
- the pages in ``pages/``, then ``app.py`` that routes to them.

Pages stay thin: widgets, one call into this package (a cached state, a service or a view), then what
it returned, drawn. A page reads the session state and never writes it, and uses no other page's
service. Nothing in :mod:`specbound` imports from here.
"""

#: The layers, bottom first, as dotted prefixes: a module belongs to the longest prefix that holds it.
LAYERS: tuple[str, ...] = (
    "dashboard.wording",
    "dashboard.views",
    "dashboard.state.upload_store",
    "dashboard.safety",
    "dashboard.state",
    "dashboard.services",
    "dashboard.widgets",
    "dashboard.routing",
    "dashboard.serve",
    "dashboard",
    "pages",
    "app",
)
