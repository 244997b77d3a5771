package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// jsonOf is v as JSON, for comparing policies and edits whole.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReplaceEditsSkipsBadRows shows the choice for a row that does not apply: it is left
// out with its reason, the other rows apply, and the running policy stays valid.
func TestReplaceEditsSkipsBadRows(t *testing.T) {
	good := LimitEdit(Limit{ID: "holds-per-account", Key: "user", Rate: "2/1m"})
	tests := []struct {
		name string
		bad  []Edit
		// skipped are the ids each skip reason names, in order.
		skipped []string
		why     string
	}{
		{"limit that does not validate", []Edit{LimitEdit(Limit{ID: "ghost", Key: "ip", Rate: "lots"})}, []string{"(limit, ghost)"}, "rate"},
		{"route to a service the file lacks", []Edit{RouteEdit(Route{ID: "pay", Match: Match{Path: "/v1/pay"}, Service: "payment", Auth: AuthNone})},
			[]string{"(route, pay)"}, "routes[pay].service"},
		{"route that needs a skipped limit", []Edit{
			LimitEdit(Limit{ID: "ghost", Key: "ip", Rate: "lots"}),
			RouteEdit(Route{ID: "pay", Match: Match{Path: "/v1/pay"}, Service: "auth", Auth: AuthNone, Limits: []string{"ghost"}}),
		}, []string{"(limit, ghost)", "(route, pay)"}, "routes[pay].limits[0]"},
		{"unreadable row", []Edit{{Kind: EditService, ID: "auth", Value: json.RawMessage(`{"max_in_flight":"many"}`)}}, []string{"(service, auth)"}, "max_in_flight"},
		{"row of another element's id", []Edit{{Kind: EditRoute, ID: "holds", Value: json.RawMessage(`{"id":"login"}`)}}, []string{"(route, holds)"}, "differs"},
		{"deleted route", []Edit{{Kind: EditRoute, ID: "holds", Deleted: true}}, []string{"(route, holds)"}, "only a limit"},
		{"unknown kind", []Edit{{Kind: "plan", ID: "free", Value: json.RawMessage(`{}`)}}, []string{"(plan, free)"}, "kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			p, err := Parse([]byte(base))
			if err != nil {
				t.Fatal(err)
			}
			l, err := NewLive(p, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.ReplaceEdits(append([]Edit{good}, tt.bad...)); err != nil {
				t.Fatalf("ReplaceEdits(good + bad) = %v, want nil: the bad rows are skipped", err)
			}
			if got := l.Current().Limit("holds-per-account").Rule.Limit; got != 2 {
				t.Errorf("holds-per-account limit = %d, want 2: the good row applies", got)
			}
			if got := l.Edits(); len(got) != 1 || got[0].ID != good.ID {
				t.Errorf("Edits() = %s, want the good row alone", jsonOf(t, got))
			}
			skipped := l.SkippedEdits()
			if len(skipped) != len(tt.skipped) {
				t.Fatalf("SkippedEdits() = %q, want %d naming %v", skipped, len(tt.skipped), tt.skipped)
			}
			for i, msg := range skipped {
				if !strings.Contains(msg, tt.skipped[i]) {
					t.Errorf("SkippedEdits()[%d] = %q, want it to name %s", i, msg, tt.skipped[i])
				}
			}
			if last := skipped[len(skipped)-1]; !strings.Contains(last, tt.why) {
				t.Errorf("SkippedEdits() = %q, want the reason to mention %q", skipped, tt.why)
			}
			if n := strings.Count(logs.String(), "admin edit skipped"); n != len(tt.skipped) {
				t.Errorf("logged %d skipped edits, want %d:\n%s", n, len(tt.skipped), logs.String())
			}
			// The next reload finds the same rows: the same skips, not logged again.
			if err := l.ReplaceEdits(append([]Edit{good}, tt.bad...)); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(logs.String(), "admin edit skipped"); n != len(tt.skipped) {
				t.Errorf("after the same rows again, logged %d skipped edits, want still %d", n, len(tt.skipped))
			}
		})
	}
}

// TestSkippedEditAppliesOnceItFits shows a row skipped for want of a service the file lacks
// applying at the first reload after a file that has it.
func TestSkippedEditAppliesOnceItFits(t *testing.T) {
	l := newLive(t, base)
	rows := []Edit{RouteEdit(Route{ID: "pay", Match: Match{Path: "/v1/pay"}, Service: "payment", Auth: AuthNone})}
	if err := l.ReplaceEdits(rows); err != nil || l.Current().Route("pay") != nil {
		t.Fatalf("ReplaceEdits(route to no service) = %v, route %v; want nil and no route", err, l.Current().Route("pay"))
	}
	withPayment := strings.Replace(base, "services:\n", "services:\n  - {name: payment, instances: [\"http://127.0.0.1:8107\"]}\n", 1)
	if err := l.ReplaceFileData([]byte(withPayment)); err != nil {
		t.Fatal(err)
	}
	if err := l.ReplaceEdits(rows); err != nil {
		t.Fatal(err)
	}
	if l.Current().Route("pay") == nil || l.SkippedEdits() != nil {
		t.Errorf("after a file with service payment, route pay %v, skipped %q; want the route and no skips", l.Current().Route("pay"), l.SkippedEdits())
	}
}

func TestCheckDoesNotApply(t *testing.T) {
	l := newLive(t, base)
	var swaps int
	l.OnChange(func(*Snapshot) error { swaps++; return nil })
	before := l.Current()
	tests := []struct {
		name  string
		edit  Edit
		field string // "" when the edit applies
	}{
		{"good limit", LimitEdit(Limit{ID: "holds-per-account", Key: "user", Rate: "1/1m"}), ""},
		{"limit with a bad rate", LimitEdit(Limit{ID: "x", Key: "ip", Rate: "lots"}), "rate"},
		{"route to no service", RouteEdit(Route{ID: "r", Match: Match{Path: "/r"}, Service: "nope", Auth: AuthNone}), "routes[r].service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.Check(tt.edit)
			fe, _ := errors.AsType[*FieldError](err)
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Check(%s) = %v, want nil", tt.name, err)
			case tt.field != "" && (fe == nil || fe.Field != tt.field):
				t.Errorf("Check(%s) = %v, want an error naming %s", tt.name, err, tt.field)
			}
		})
	}
	if l.Current() != before || swaps != 0 || len(l.Edits()) != 0 {
		t.Errorf("after Check, %d swaps and edits %s; want the running policy untouched", swaps, jsonOf(t, l.Edits()))
	}
}

// TestSyncEditsKeepsAnEditTakenMeanwhile reads the table while an admin request on the same
// replica stores and applies an edit: the rows read predate it, and replacing the edits with
// them would drop it until the next reload.
func TestSyncEditsKeepsAnEditTakenMeanwhile(t *testing.T) {
	ctx := context.Background()
	shadow := LimitEdit(Limit{ID: "holds-per-account", Key: "user", Rate: "2/1m", Mode: "shadow"})
	holds := func(l *Live) bool {
		return slices.ContainsFunc(l.Edits(), func(e Edit) bool { return e.ID == shadow.ID })
	}

	t.Run("read again", func(t *testing.T) {
		live := newLive(t, base)
		var reads int
		load := func(context.Context) ([]Edit, error) {
			reads++
			if reads == 1 {
				if err := live.Apply(shadow); err != nil {
					t.Fatal(err)
				}
				return nil, nil // read before the edit was stored
			}
			return []Edit{shadow}, nil
		}
		if err := SyncEdits(ctx, load, live); err != nil {
			t.Fatalf("SyncEdits = %v, want nil", err)
		}
		if reads != 2 || !holds(live) {
			t.Errorf("after SyncEdits: %d reads, edits %s; want 2 reads and the edit taken meanwhile kept", reads, jsonOf(t, live.Edits()))
		}
	})

	t.Run("edits keep landing", func(t *testing.T) {
		live := newLive(t, base)
		var reads int
		load := func(context.Context) ([]Edit, error) {
			reads++
			if err := live.Apply(shadow); err != nil {
				t.Fatal(err)
			}
			return nil, nil
		}
		if err := SyncEdits(ctx, load, live); !errors.Is(err, ErrEditsBusy) {
			t.Fatalf("SyncEdits = %v, want ErrEditsBusy", err)
		}
		if reads != syncEditsReads || !holds(live) {
			t.Errorf("after SyncEdits: %d reads, edits %s; want %d reads and the edits held kept", reads, jsonOf(t, live.Edits()), syncEditsReads)
		}
	})

	t.Run("quiet", func(t *testing.T) {
		live := newLive(t, base)
		if err := live.Apply(shadow); err != nil {
			t.Fatal(err)
		}
		var reads int
		load := func(context.Context) ([]Edit, error) { reads++; return nil, nil }
		if err := SyncEdits(ctx, load, live); err != nil || reads != 1 || holds(live) {
			t.Errorf("SyncEdits(no rows) = %v after %d reads, edits %s; want nil after 1 read, no edits", err, reads, jsonOf(t, live.Edits()))
		}
	})

	t.Run("errors", func(t *testing.T) {
		live := newLive(t, base)
		down := errors.New("database down")
		if err := SyncEdits(ctx, func(context.Context) ([]Edit, error) { return nil, down }, live); !errors.Is(err, down) {
			t.Errorf("SyncEdits(failing read) = %v, want %v", err, down)
		}
		live.OnChange(func(*Snapshot) error { return errors.New("pools refuse it") })
		err := SyncEdits(ctx, func(context.Context) ([]Edit, error) { return []Edit{shadow}, nil }, live)
		if !errors.Is(err, ErrEditsRefused) || holds(live) {
			t.Errorf("SyncEdits(refused rows) = %v, edits %s; want ErrEditsRefused and none applied", err, jsonOf(t, live.Edits()))
		}
	})
}

// TestStaleRowsNeverUndoAChange: rows read from the table before a change this replica made
// (a drop it stored, or a newer reload) are refused, so the change is not undone.
func TestStaleRowsNeverUndoAChange(t *testing.T) {
	shadow := LimitEdit(Limit{ID: "holds-per-account", Key: "user", Rate: "2/1m", Mode: "shadow"})
	payment := ServiceEdit(Service{Name: "payment", Instances: []string{"http://127.0.0.1:9"}})
	ids := func(l *Live) []string {
		var out []string
		for _, e := range l.Edits() {
			out = append(out, e.ID)
		}
		return out
	}

	t.Run("a drop stored meanwhile", func(t *testing.T) {
		live := newLive(t, base)
		// A reload starts and reads the row of shadow, which another replica stored and this
		// one does not hold yet. Then DELETE /admin/edits here takes the row off the table,
		// and its own sync finds nothing to change on this replica.
		v := live.EditsVersion()
		live.EditsStored()
		if ok, err := live.ReplaceEditsAt(live.EditsVersion(), nil); !ok || err != nil {
			t.Fatalf("the drop's own sync: ReplaceEditsAt = %v, %v; want true, nil", ok, err)
		}
		if ok, _ := live.ReplaceEditsAt(v, []Edit{shadow}); ok || len(live.Edits()) != 0 {
			t.Errorf("the reload's stale rows: replaced %v, edits %v; want refused, the deleted edit not applied", ok, ids(live))
		}
	})

	t.Run("a newer reload", func(t *testing.T) {
		live := newLive(t, base)
		older, newer := live.EditsVersion(), live.EditsVersion() // two reloads read the table
		if ok, _ := live.ReplaceEditsAt(newer, []Edit{shadow, payment}); !ok {
			t.Fatal("the newer rows were refused")
		}
		if ok, _ := live.ReplaceEditsAt(older, []Edit{shadow}); ok || len(live.Edits()) != 2 {
			t.Errorf("the older rows: replaced %v, edits %v; want refused, both edits kept", ok, ids(live))
		}
	})

	t.Run("a drop without a table", func(t *testing.T) {
		live := newLive(t, base)
		for _, e := range []Edit{shadow, payment} {
			if err := live.Apply(e); err != nil {
				t.Fatal(err)
			}
		}
		v := live.EditsVersion()
		if err := live.DropEdits(func(e Edit) bool { return e.Kind == EditLimit }); err != nil {
			t.Fatal(err)
		}
		if got := ids(live); !slices.Equal(got, []string{"payment"}) || live.EditsVersion() == v {
			t.Errorf("after DropEdits(limits): edits %v, version moved %v; want [payment], moved", got, live.EditsVersion() != v)
		}
	})
}
