// Links whose query string Streamlit refuses whole (see link_guard.py).
//
// data = {max_fields, max_length}: Streamlit's own limits on a query string. A link beyond either
// opens with no parameters at all while the address bar keeps it; this script, which sees the
// address bar, removes the query string from it (history.replaceState: no reload, no new history
// entry) and tells the server how many parameters there were, so the page can say what happened.

export default function (component) {
  const { data, setTriggerValue } = component;
  const query = window.location.search.replace(/^\?/, "");
  if (query === "") return;
  const fields = query.split("&").length; // Streamlit counts the '&' separators, as here
  if (fields <= data.max_fields && query.length <= data.max_length) return;
  window.history.replaceState(window.history.state, "", window.location.pathname + window.location.hash);
  setTriggerValue("dropped", { fields, length: query.length });
}
