package inventory

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/services/waitroom/pass"
)

func TestLayoutValidate(t *testing.T) {
	sec := func(id, class string, rows, per int) SectionLayout {
		return SectionLayout{ID: id, Class: class, Rows: rows, SeatsPerRow: per}
	}
	tests := []struct {
		name      string
		layout    Layout
		wantField string // "" = valid
	}{
		{"seated and GA", Layout{Sections: []SectionLayout{sec("A", "cat-1", 10, 20)}, GA: []GAClass{{"ga-floor", 500}}}, ""},
		{"GA only", Layout{GA: []GAClass{{"ga", 1}}}, ""},
		{"two sections of one class", Layout{Sections: []SectionLayout{sec("A", "cat-1", 1, 1), sec("B", "cat-1", 1, 1)}}, ""},
		{"empty", Layout{}, "sections"},
		{"bad section id", Layout{Sections: []SectionLayout{sec("A-1", "cat-1", 1, 1)}}, "sections[0].id"},
		{"duplicate section", Layout{Sections: []SectionLayout{sec("A", "c", 1, 1), sec("A", "c", 1, 1)}}, "sections[1].id"},
		{"bad class", Layout{Sections: []SectionLayout{sec("A", "Cat 1", 1, 1)}}, "sections[0].class"},
		{"no rows", Layout{Sections: []SectionLayout{sec("A", "c", 0, 1)}}, "sections[0].rows"},
		{"too many seats per row", Layout{Sections: []SectionLayout{sec("A", "c", 1, maxSeatsPerRow+1)}}, "sections[0].seats_per_row"},
		{"too many seats in all", Layout{Sections: []SectionLayout{sec("A", "c", 200, 200), sec("B", "c", 200, 200), sec("C", "c", 200, 200)}}, "sections[2]"},
		{"GA bad capacity", Layout{GA: []GAClass{{"ga", 0}}}, "ga[0].capacity"},
		{"GA duplicate", Layout{GA: []GAClass{{"ga", 1}, {"ga", 2}}}, "ga[1].class"},
		{"GA class also seated", Layout{Sections: []SectionLayout{sec("A", "c", 1, 1)}, GA: []GAClass{{"c", 2}}}, "ga[0].class"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertField(t, "Validate()", tt.layout.Validate(), tt.wantField)
		})
	}
}

// assertField checks that err is nil when want is "", else an Invalid problem naming want.
func assertField(t *testing.T, call string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("%s = %v, want nil", call, err)
		}
		return
	}
	p, ok := err.(*problem.Error)
	if !ok || p.Code != problem.Invalid || p.Field != want {
		t.Fatalf("%s = %v, want invalid field %q", call, err, want)
	}
}

func TestLayoutSeats(t *testing.T) {
	l := Layout{Sections: []SectionLayout{{ID: "B", Class: "c2", Rows: 2, SeatsPerRow: 3}, {ID: "A", Class: "c1", Rows: 1, SeatsPerRow: 2}}}
	var got []string
	for _, s := range l.Seats() {
		got = append(got, s.ID+"/"+s.Class)
	}
	want := "B-1-1/c2 B-1-2/c2 B-1-3/c2 B-2-1/c2 B-2-2/c2 B-2-3/c2 A-1-1/c1 A-1-2/c1"
	if strings.Join(got, " ") != want {
		t.Errorf("Seats() = %v, want %v", got, want)
	}
}

func TestParseSeatID(t *testing.T) {
	tests := []struct {
		in          string
		section     string
		row, number int
		ok          bool
	}{
		{"A-3-12", "A", 3, 12, true},
		{"PIT-1-1", "PIT", 1, 1, true},
		{"A-03-12", "", 0, 0, false}, // one spelling per seat, or "A-3-12" and "A-03-12" hold one seat twice
		{"A-0-1", "", 0, 0, false},
		{"A-1", "", 0, 0, false},
		{"A-1-1-1", "", 0, 0, false},
		{"A-x-1", "", 0, 0, false},
		{"-1-1", "", 0, 0, false},
		{"A-1--1", "", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, r, n, ok := ParseSeatID(tt.in)
			if s != tt.section || r != tt.row || n != tt.number || ok != tt.ok {
				t.Errorf("ParseSeatID(%q) = %q, %d, %d, %v, want %q, %d, %d, %v", tt.in, s, r, n, ok, tt.section, tt.row, tt.number, tt.ok)
			}
			if tt.ok && SeatID(s, r, n) != tt.in {
				t.Errorf("SeatID(%q, %d, %d) = %q, want %q", s, r, n, SeatID(s, r, n), tt.in)
			}
		})
	}
}

func TestCompareSeatIDs(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"A-1-2", "A-1-10", -1},
		{"A-2-1", "A-10-1", -1},
		{"B-1-1", "A-9-9", 1},
		{"A-1-1", "A-1-1", 0},
		{"A-1-1", "junk", -1},
		{"junk", "A-1-1", 1},
		{"x", "y", -1},
	}
	for _, tt := range tests {
		if got := CompareSeatIDs(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareSeatIDs(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestHoldRequestValidate(t *testing.T) {
	base := HoldRequest{EventID: "evt-001", Account: "acc-1"}
	with := func(f func(r *HoldRequest)) HoldRequest { r := base; f(&r); return r }
	tests := []struct {
		name      string
		req       HoldRequest
		wantCode  problem.Code // "" = valid
		wantField string
	}{
		{"seats", with(func(r *HoldRequest) { r.Seats = []string{"A-1-1", "A-1-2"} }), "", ""},
		{"eight seats", with(func(r *HoldRequest) { r.Seats = strings.Split("A-1-1 A-1-2 A-1-3 A-1-4 A-1-5 A-1-6 A-1-7 A-1-8", " ") }), "", ""},
		{"GA", with(func(r *HoldRequest) { r.Class, r.Quantity = "ga-floor", 2 }), "", ""},
		{"anonymous", with(func(r *HoldRequest) { r.Account = ""; r.Seats = []string{"A-1-1"} }), problem.Unauthorized, ""},
		{"bad event id", with(func(r *HoldRequest) { r.EventID = "evt/1"; r.Seats = []string{"A-1-1"} }), problem.Invalid, "event_id"},
		{"nothing asked", base, problem.Invalid, "seats"},
		{"both", with(func(r *HoldRequest) { r.Seats = []string{"A-1-1"}; r.Class = "ga" }), problem.Invalid, "seats"},
		{"nine seats", with(func(r *HoldRequest) {
			r.Seats = strings.Split("A-1-1 A-1-2 A-1-3 A-1-4 A-1-5 A-1-6 A-1-7 A-1-8 A-1-9", " ")
		}), problem.Invalid, "seats"},
		{"bad seat id", with(func(r *HoldRequest) { r.Seats = []string{"A-1-1", "A1"} }), problem.Invalid, "seats[1]"},
		{"seat twice", with(func(r *HoldRequest) { r.Seats = []string{"A-1-1", "A-1-1"} }), problem.Invalid, "seats[1]"},
		{"zero quantity", with(func(r *HoldRequest) { r.Class = "ga" }), problem.Invalid, "quantity"},
		{"nine tickets", with(func(r *HoldRequest) { r.Class, r.Quantity = "ga", 9 }), problem.Invalid, "quantity"},
		{"quantity without class", with(func(r *HoldRequest) { r.Quantity = 2 }), problem.Invalid, "seats"},
		{"bad class", with(func(r *HoldRequest) { r.Class, r.Quantity = "GA FLOOR", 1 }), problem.Invalid, "class"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			p, ok := err.(*problem.Error)
			if !ok || p.Code != tt.wantCode || p.Field != tt.wantField {
				t.Fatalf("Validate() = %v, want %s naming %q", err, tt.wantCode, tt.wantField)
			}
		})
	}
}

func TestCheckAdmission(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	forged := ed25519.NewKeyFromSeed([]byte(strings.Repeat("f", ed25519.SeedSize)))
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	valid := pass.Sign(priv, pass.Pass{EventID: "evt-040", User: "acc-1", ExpiresAt: now.Add(time.Minute)})
	tests := []struct {
		name  string
		key   ed25519.PublicKey
		token string
		event string
		user  string
		want  problem.Code // "" = admitted
	}{
		{"valid", pub, valid, "evt-040", "acc-1", ""},
		{"missing", pub, "", "evt-040", "acc-1", problem.Forbidden},
		{"forged", pub, pass.Sign(forged, pass.Pass{EventID: "evt-040", User: "acc-1", ExpiresAt: now.Add(time.Minute)}), "evt-040", "acc-1", problem.Forbidden},
		{"expired", pub, pass.Sign(priv, pass.Pass{EventID: "evt-040", User: "acc-1", ExpiresAt: now}), "evt-040", "acc-1", problem.Forbidden},
		{"another event", pub, valid, "evt-001", "acc-1", problem.Forbidden},
		{"another account", pub, valid, "evt-040", "acc-2", problem.Forbidden},
		{"garbage", pub, "not-a-pass", "evt-040", "acc-1", problem.Forbidden},
		{"no key configured", nil, valid, "evt-040", "acc-1", problem.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAdmission(tt.key, tt.token, now, tt.event, tt.user)
			if got := codeOrEmpty(err); got != tt.want {
				t.Errorf("CheckAdmission(%s, %s) = %v, want code %q", tt.event, tt.user, err, tt.want)
			}
		})
	}
}

func codeOrEmpty(err error) problem.Code {
	if err == nil {
		return ""
	}
	return problem.CodeOf(err)
}

func TestHoldRules(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	hold := func(s HoldStatus, expires time.Duration) Hold {
		return Hold{ID: "h1", Account: "acc-1", Status: s, ExpiresAt: now.Add(expires)}
	}
	tests := []struct {
		name        string
		hold        Hold
		wantDue     bool
		wantConfirm problem.Code
		wantRelease problem.Code
	}{
		{"active", hold(HoldActive, time.Minute), false, "", ""},
		{"active past expiry", hold(HoldActive, 0), true, problem.Gone, ""},
		{"confirmed", hold(HoldConfirmed, -time.Hour), false, "", problem.Conflict},
		{"released", hold(HoldReleased, time.Minute), false, problem.Gone, ""},
		{"expired", hold(HoldExpired, -time.Minute), false, problem.Gone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.hold.Due(now); got != tt.wantDue {
				t.Errorf("Due() = %v, want %v", got, tt.wantDue)
			}
			if got := codeOrEmpty(tt.hold.CanConfirm(now)); got != tt.wantConfirm {
				t.Errorf("CanConfirm() code = %q, want %q", got, tt.wantConfirm)
			}
			if got := codeOrEmpty(tt.hold.CanRelease()); got != tt.wantRelease {
				t.Errorf("CanRelease() code = %q, want %q", got, tt.wantRelease)
			}
		})
	}
	h := hold(HoldActive, time.Minute)
	for _, tt := range []struct {
		account string
		want    problem.Code
	}{{"acc-1", ""}, {"", ""}, {"acc-2", problem.Forbidden}} {
		if got := codeOrEmpty(h.CheckOwner(tt.account)); got != tt.want {
			t.Errorf("CheckOwner(%q) code = %q, want %q", tt.account, got, tt.want)
		}
	}
}

func TestCountsLevel(t *testing.T) {
	tests := []struct {
		name string
		c    Counts
		want Level
	}{
		{"no seat map", Counts{}, LevelUnknown},
		{"plenty", Counts{Total: 100, Available: 50}, LevelAvailable},
		{"just over a tenth", Counts{Total: 100, Available: 11}, LevelAvailable},
		{"a tenth", Counts{Total: 100, Available: 10}, LevelLimited},
		{"one left", Counts{Total: 100, Available: 1}, LevelLimited},
		{"all held", Counts{Total: 100, Held: 100}, LevelSoldOut},
		{"sold out", Counts{Total: 5, Sold: 5}, LevelSoldOut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Level(); got != tt.want {
				t.Errorf("%+v.Level() = %q, want %q", tt.c, got, tt.want)
			}
		})
	}
}

func TestBuildSeatMap(t *testing.T) {
	l := Layout{Sections: []SectionLayout{{ID: "B", Class: "c2", Rows: 2, SeatsPerRow: 2}, {ID: "A", Class: "c1", Rows: 1, SeatsPerRow: 1}}}
	seats := l.Seats()
	seats[1].Status = SeatHeld
	seats[4].Status = SeatSold
	m := buildSeatMap("e", true, seats, []GAAvailability{{Class: "ga", Counts: Counts{Total: 10, Available: 7, Held: 2, Sold: 1}}})
	if len(m.Sections) != 2 || m.Sections[0].ID != "B" || len(m.Sections[0].Rows) != 2 || len(m.Sections[1].Rows[0].Seats) != 1 {
		t.Fatalf("buildSeatMap sections = %+v, want B (2 rows) then A (1 row of 1)", m.Sections)
	}
	if got, want := m.Sections[0].Rows[0].Seats[1].Status, SeatHeld; got != want {
		t.Errorf("B-1-2 status = %s, want %s", got, want)
	}
	if want := (Counts{Total: 15, Available: 10, Held: 3, Sold: 2}); m.Counts != want {
		t.Errorf("Counts = %+v, want %+v", m.Counts, want)
	}
}
