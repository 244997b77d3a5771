package catalog

import (
	"context"
	"fmt"
	"strings"

	"boxoffice.dev/platform/sqldb/keyset"
)

// soonestFirst is the list ListEvents pages through.
var soonestFirst = keyset.List[Event]{
	Select: `SELECT ` + eventColumns + ` FROM events`,
	Order:  keyset.Order{Key: "starts_at"},
	Scan:   scanEvent,
	Cursor: func(e Event) keyset.Cursor { return keyset.Cursor{Key: e.StartsAt.UnixMilli(), ID: e.ID} },
}

// ListEvents returns up to limit events matching f, soonest first (ties by id), after the
// position cursor names ("" = from the start), and the cursor of the next page ("" = no
// more). The cursor is a keyset position, so pages stay consistent while events are added.
func (s *Store) ListEvents(ctx context.Context, f Filter, limit int, cursor string) ([]Event, string, error) {
	if err := f.Validate(); err != nil {
		return nil, "", err
	}
	where, args := filterSQL(f)
	events, next, err := soonestFirst.Page(ctx, s.DB, limit, cursor, strings.Join(where, ` AND `), args...)
	if err != nil {
		return nil, "", fmt.Errorf("list events: %w", err)
	}
	return events, next, nil
}

// filterSQL turns f into conditions on the folded key columns. LIKE patterns escape the
// user's % and _ so they match literally.
func filterSQL(f Filter) (where []string, args []any) {
	add := func(cond string, arg any) {
		where = append(where, cond)
		args = append(args, arg)
	}
	if f.City != "" {
		add(`city_key = ?`, Fold(f.City))
	}
	if !f.From.IsZero() {
		add(`starts_at >= ?`, f.From.UnixMilli())
	}
	if !f.To.IsZero() {
		add(`starts_at < ?`, f.To.UnixMilli())
	}
	if f.Query != "" {
		add(`title_key LIKE ? ESCAPE '\'`, "%"+escapeLike(Fold(f.Query))+"%")
	}
	if f.Performer != "" {
		add(`performers_key LIKE ? ESCAPE '\'`, "%"+escapeLike(Fold(f.Performer))+"%")
	}
	if f.MaxPrice > 0 {
		add(`min_price <= ?`, f.MaxPrice)
	}
	if f.Tag != "" {
		add(`tags_key LIKE ? ESCAPE '\'`, "%|"+escapeLike(Fold(f.Tag))+"|%")
	}
	return where, args
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
