-- What PlaceHold counts before it claims a ticket: the tickets an account holds of an event
-- across its active holds (see Store.MaxTicketsPerAccount). Only active rows are indexed: an
-- account's ended holds pile up over time and the count never reads them.
CREATE INDEX holds_active_by_account ON holds (account, event_id) WHERE status = 'active';
