-- When the event's tickets may be held, as the catalog announces it (see Store.PlaceHold):
-- from on_sale_ms (its on_sale_at) until starts_ms (its starts_at), in milliseconds like every
-- time here. NULL does not restrict: rows made before this migration stay on sale, so an
-- upgrade never closes a running sale, until the catalog's next change of the event fills
-- them; a map an admin declared for an event the catalog never announced stays on sale too.
-- A declared map follows the catalog's window too, so on such a map catalog_version is now
-- the version whose window it holds (its seats still follow no version).
ALTER TABLE events ADD COLUMN on_sale_ms BIGINT;
ALTER TABLE events ADD COLUMN starts_ms BIGINT;
