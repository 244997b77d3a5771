// Starts GraphiQL in #graphiql, posting to its data-endpoint with the headers of the
// headers editor, which opens prefilled with data-headers. A file rather than an inline
// script, so the page runs under a Content-Security-Policy that forbids inline scripts. The
// BFFs answer plain JSON (no @defer), hence no incremental delivery.
(function () {
  var el = document.getElementById("graphiql");
  var root = ReactDOM.createRoot(el);
  root.render(
    React.createElement(GraphiQL, {
      fetcher: GraphiQL.createFetcher({ url: el.dataset.endpoint, enableIncrementalDelivery: false }),
      defaultHeaders: el.dataset.headers,
      defaultEditorToolsVisibility: "headers",
    })
  );
})();
