package keyset_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"boxoffice.dev/platform/sqldb"
	"boxoffice.dev/platform/sqldb/keyset"
	"boxoffice.dev/platform/testkit"
)

type item struct {
	ID      string
	Owner   string
	Created int64
}

var itemsNewestFirst = keyset.List[item]{
	Select:  `SELECT id, owner, created_us FROM items`,
	Order:   keyset.Order{Key: "created_us", Desc: true},
	Default: 2, Max: 3,
	Scan: func(r sqldb.Scanner) (item, error) {
		var it item
		return it, r.Scan(&it.ID, &it.Owner, &it.Created)
	},
	Cursor: func(it item) keyset.Cursor { return keyset.Cursor{Key: it.Created, ID: it.ID} },
}

// TestListPagesThroughAFilteredTable reads one owner's rows page by page, on SQLite and
// PostgreSQL: every row once, newest first, ties broken by id, the other owner's never, and a
// row added while paging does not shift the pages already read.
func TestListPagesThroughAFilteredTable(t *testing.T) {
	testkit.ForEachDB(t, "keyset", func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, `CREATE TABLE items (id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_us BIGINT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		add := func(id, owner string, created int64) {
			t.Helper()
			if _, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO items VALUES (?, ?, ?)`), id, owner, created); err != nil {
				t.Fatal(err)
			}
		}
		for i, created := range []int64{10, 20, 20, 30, 40} {
			add(fmt.Sprintf("a%d", i), "ann", created)
			add(fmt.Sprintf("b%d", i), "bob", created)
		}

		var got []string
		cursor, pages := "", 0
		for ; pages < 10; pages++ {
			items, next, err := itemsNewestFirst.Page(ctx, db, 0, cursor, "owner = ?", "ann")
			if err != nil {
				t.Fatalf("Page(cursor %q) = %v", cursor, err)
			}
			for _, it := range items {
				got = append(got, it.ID)
			}
			if pages == 0 {
				add("a9", "ann", 50) // newer than the first page: never part of a later one
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if want := []string{"a4", "a3", "a2", "a1", "a0"}; !slices.Equal(got, want) || pages != 2 {
			t.Errorf("pages of 2 = %v in %d pages, want %v in 3", got, pages+1, want)
		}

		all, next, err := itemsNewestFirst.Page(ctx, db, 3, "", "")
		if err != nil || len(all) != 3 || next == "" || all[0].ID != "a9" {
			t.Errorf("Page(limit 3, no filter) = %v, %q, %v; want the 3 newest rows of both owners and a next cursor", all, next, err)
		}
		if _, _, err := itemsNewestFirst.Page(ctx, db, 4, "", ""); err == nil {
			t.Error("Page(limit 4 over Max 3) = nil error, want an invalid limit")
		}
	})
}
