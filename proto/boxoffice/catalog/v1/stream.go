package catalogv1

// Where the catalog announces its changes on JetStream, for the services that follow them
// (inventory lays out seat maps, the waitroom opens flash sales, search indexes events): the
// stream the catalog creates, every subject it publishes on, and the subjects of event changes
// (boxoffice.catalog.event.created and .updated, each an EventChange carrying the whole event
// as protojson). Written by hand beside the generated code, since they are part of the same
// contract.
const (
	Stream         = "CATALOG"
	StreamSubjects = "boxoffice.catalog.>"
	EventSubjects  = "boxoffice.catalog.event.>"
)
