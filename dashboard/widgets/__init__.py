"""What the pages draw with: the sidebar, the p controls, drill-downs, tables, exports, the
headline, the page look, the Lab's training progress and "Open as a model", and the scripts that run
in the browser.
"""
