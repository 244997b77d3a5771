-- Where each seat map came from, so that the catalog's changes re-lay the maps inventory laid
-- out itself (DefaultLayout) and never one an admin declared (see Store.ApplyCatalogLayout).
-- Maps made before this migration count as declared and are left as they are.
ALTER TABLE events ADD COLUMN source TEXT NOT NULL DEFAULT 'admin' CHECK (source IN ('admin', 'catalog'));
-- The catalog's version of the event this map last followed; a change no newer is a repeat.
ALTER TABLE events ADD COLUMN catalog_version BIGINT NOT NULL DEFAULT 0;
-- The Layout the seats were made from, as JSON: new ticket classes change the seats only
-- when they lay out differently.
ALTER TABLE events ADD COLUMN layout TEXT NOT NULL DEFAULT '';
