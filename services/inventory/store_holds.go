package inventory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"boxoffice.dev/platform/problem"
	"boxoffice.dev/platform/sqldb"
)

// PlaceHold claims the tickets req asks for, all or none, for HoldTTL, and records hold.placed.
// It answers NotFound (no seat map), Unprocessable (outside the SaleWindow, over the account's
// cap), Forbidden (a flash sale without a valid pass), Invalid (seats or a class the event
// lacks), Conflict (a seat taken, too few GA tickets). No two holds take one ticket
// (docs/lessons/waiting-room.md, "Never oversell"); an IdempotencyKey places it once at most.
func (s *Store) PlaceHold(ctx context.Context, req HoldRequest) (Hold, error) {
	h, _, err := s.PlaceHoldOnce(ctx, req)
	return h, err
}

// PlaceHoldOnce is PlaceHold reporting whether the hold was placed here (created true) or is
// the one an earlier request with req's IdempotencyKey placed, as it is now (active, or since
// confirmed, released or expired): a key names one hold for good. The key with another
// request is Unprocessable; a refused request records nothing, leaving its key free. Of
// concurrent twins exactly one places the hold (docs/architecture.md, "Idempotency keys").
func (s *Store) PlaceHoldOnce(ctx context.Context, req HoldRequest) (h Hold, created bool, err error) {
	defer func() {
		if err != nil {
			s.metrics.holdRefused(ctx, err)
		}
	}()
	if err := req.Validate(); err != nil {
		return Hold{}, false, err
	}
	if h, found, err := s.replayHold(ctx, req); err != nil || found {
		return h, false, err
	}
	h, taken, err := s.placeHold(ctx, req)
	switch {
	case err != nil:
		return Hold{}, false, err
	case taken:
		h, _, err := s.replayHold(ctx, req)
		return h, false, err
	}
	s.committed()
	s.metrics.holdPlaced(ctx)
	return h, true, nil
}

// replayHold returns the hold an earlier request with req's idempotency key placed: found is
// false when req has no key or its key is new.
func (s *Store) replayHold(ctx context.Context, req HoldRequest) (h Hold, found bool, err error) {
	if req.IdempotencyKey == "" {
		return Hold{}, false, nil
	}
	var hash, id string
	err = s.DB.QueryRowContext(ctx, s.DB.Rebind(`SELECT request_hash, hold_id FROM hold_idempotency WHERE account = ? AND idempotency_key = ?`),
		req.Account, req.IdempotencyKey).Scan(&hash, &id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Hold{}, false, nil
	case err != nil:
		return Hold{}, false, fmt.Errorf("read idempotency key: %w", err)
	case hash != req.Hash():
		return Hold{}, false, &problem.Error{Code: problem.Unprocessable, Field: IdempotencyKeyHeader,
			Message: "this key was used for another hold request; use a new key for a new hold"}
	}
	h, err = s.Hold(ctx, id, req.Account)
	return h, err == nil, err
}

// placeHold places req's hold; taken reports that req's idempotency key was recorded by
// another request meanwhile, in which case nothing was placed.
func (s *Store) placeHold(ctx context.Context, req HoldRequest) (_ Hold, taken bool, _ error) {
	id := s.IDs.New("hold-")
	now := s.Clock.Now().UTC().Truncate(time.Millisecond) // as stored: a hold reads back the same
	h := Hold{ID: id, EventID: req.EventID, Account: req.Account, Status: HoldActive,
		Class: req.Class, Quantity: req.Quantity, CreatedAt: now, ExpiresAt: now.Add(s.holdTTL())}
	if len(req.Seats) > 0 {
		h.Seats = slices.SortedFunc(slices.Values(req.Seats), CompareSeatIDs)
		h.Quantity = len(h.Seats)
	}
	var err error
	err = s.DB.InTx(ctx, func(tx *sql.Tx) error {
		if taken, err = s.recordKey(ctx, tx, req, h); err != nil || taken {
			return err
		}
		// FOR SHARE: many holds proceed together, a seat-map replacement waits for them.
		var flash bool
		var onSale, starts sql.NullInt64
		err := tx.QueryRowContext(ctx, s.DB.Rebind(`SELECT flash_sale, on_sale_ms, starts_ms FROM events WHERE event_id = ?`+s.forShare()), h.EventID).
			Scan(&flash, &onSale, &starts)
		if errors.Is(err, sql.ErrNoRows) {
			return problem.New(problem.NotFound, "event %s has no seat map", h.EventID)
		}
		if err != nil {
			return fmt.Errorf("read event: %w", err)
		}
		// The window before the pass: a fan early for a flash sale learns when it opens,
		// not that a pass is missing.
		if err := (SaleWindow{Opens: timeOrZero(onSale), Starts: timeOrZero(starts)}).Check(now, h.EventID); err != nil {
			return err
		}
		if flash {
			if err := CheckAdmission(s.PassKey, req.Pass, now, h.EventID, h.Account); err != nil {
				return err
			}
		}
		if err := s.checkAccountCap(ctx, tx, h, now); err != nil {
			return err
		}
		if h.Class != "" {
			if err := s.claimGA(ctx, tx, h); err != nil {
				return err
			}
			h.Tickets = []TicketCount{{Class: h.Class, Quantity: h.Quantity}}
		} else if err := s.claimSeats(ctx, tx, h); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO holds
			(id, event_id, account, status, class_id, quantity, created_ms, expires_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			h.ID, h.EventID, h.Account, h.Status, h.Class, h.Quantity, now.UnixMilli(), h.ExpiresAt.UnixMilli(), now.UnixMilli()); err != nil {
			return fmt.Errorf("write hold: %w", err)
		}
		if h.Class == "" {
			if _, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO hold_seats (hold_id, seat_id, class_id)
				SELECT ?, seat_id, class_id FROM seats WHERE event_id = ? AND hold_id = ?`), h.ID, h.EventID, h.ID); err != nil {
				return fmt.Errorf("write hold seats: %w", err)
			}
			seated := []Hold{{ID: h.ID}}
			if err := s.readHoldSeats(ctx, tx, seated); err != nil {
				return err
			}
			h.Tickets = seated[0].Tickets
		}
		return s.record(ctx, tx, verbPlaced, h, now)
	})
	return h, taken, err
}

// recordKey writes req's idempotency record for h, first thing in h's transaction; taken
// reports that the key was already recorded (a concurrent twin won), leaving tx unchanged.
// A request without a key records nothing.
func (s *Store) recordKey(ctx context.Context, tx *sql.Tx, req HoldRequest, h Hold) (taken bool, err error) {
	if req.IdempotencyKey == "" {
		return false, nil
	}
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`INSERT INTO hold_idempotency (account, idempotency_key, request_hash, hold_id, created_ms)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (account, idempotency_key) DO NOTHING`),
		req.Account, req.IdempotencyKey, req.Hash(), h.ID, h.CreatedAt.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("write idempotency key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("write idempotency key: %w", err)
	}
	return n == 0, nil
}

// checkAccountCap refuses h when the tickets h.Account already holds of h.EventID and h's
// own would pass the cap. Count and write must not interleave for one account, so on
// PostgreSQL they run under an advisory lock on the (event, account) pair, queueing one
// account's holds of one event and no one else's; SQLite runs one writer at a time. Why not
// a row lock: docs/lessons/waiting-room.md, "Never oversell".
func (s *Store) checkAccountCap(ctx context.Context, tx *sql.Tx, h Hold, now time.Time) error {
	if s.DB.Dialect == sqldb.Postgres {
		// The two-key form: its keys never meet the one-key locks of the outbox and of migrations.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, h.EventID, h.Account); err != nil {
			return fmt.Errorf("lock the account's holds: %w", err)
		}
	}
	var held int
	// A hold past its expiry no longer counts: it can no longer be confirmed, and its tickets
	// go back to sale at the sweeper's next pass.
	err := tx.QueryRowContext(ctx, s.DB.Rebind(`SELECT COALESCE(SUM(quantity), 0) FROM holds
		WHERE account = ? AND event_id = ? AND status = 'active' AND expires_ms > ?`), h.Account, h.EventID, now.UnixMilli()).Scan(&held)
	if err != nil {
		return fmt.Errorf("count the account's tickets: %w", err)
	}
	return CheckAccountCap(held, h.Quantity, s.maxTicketsPerAccount(), h.EventID)
}

// claimSeats marks h's seats held by h, or fails without changing any.
func (s *Store) claimSeats(ctx context.Context, tx *sql.Tx, h Hold) error {
	args := []any{h.ID, h.EventID}
	for _, id := range h.Seats {
		args = append(args, id)
	}
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE seats SET status = 'held', hold_id = ?
		WHERE event_id = ? AND status = 'available' AND seat_id IN (`+placeholders(len(h.Seats))+`)`), args...)
	if err != nil {
		return fmt.Errorf("claim seats: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("claim seats: %w", err)
	} else if int(n) == len(h.Seats) {
		return nil
	}
	return s.seatsUnavailable(ctx, tx, h)
}

// seatsUnavailable explains a failed claim: seats the event does not have are the client's
// mistake (Invalid), seats someone else holds or bought are a Conflict. It runs before the
// rollback, so the seats this hold did take still show as its own and are left out.
func (s *Store) seatsUnavailable(ctx context.Context, tx *sql.Tx, h Hold) error {
	args := []any{h.EventID}
	for _, id := range h.Seats {
		args = append(args, id)
	}
	rows, err := tx.QueryContext(ctx, s.DB.Rebind(`SELECT seat_id, status, COALESCE(hold_id, '') FROM seats
		WHERE event_id = ? AND seat_id IN (`+placeholders(len(h.Seats))+`)`), args...)
	if err != nil {
		return fmt.Errorf("read seats: %w", err)
	}
	defer rows.Close()
	free := map[string]bool{}
	for rows.Next() {
		var id, holder string
		var st SeatStatus
		if err := rows.Scan(&id, &st, &holder); err != nil {
			return fmt.Errorf("read seats: %w", err)
		}
		free[id] = st == SeatAvailable || holder == h.ID
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read seats: %w", err)
	}
	var taken []string
	for _, id := range h.Seats {
		switch ok, known := free[id]; {
		case !known:
			return problem.InvalidField("seats", "event %s has no seat %s", h.EventID, id)
		case !ok:
			taken = append(taken, id)
		}
	}
	return problem.New(problem.Conflict, "seats no longer available: %s", strings.Join(taken, ", "))
}

// claimGA counts h's tickets as held in its class, or fails without changing it.
func (s *Store) claimGA(ctx context.Context, tx *sql.Tx, h Hold) error {
	res, err := tx.ExecContext(ctx, s.DB.Rebind(`UPDATE ga_classes SET held = held + ?
		WHERE event_id = ? AND class_id = ? AND capacity - sold - held >= ?`), h.Quantity, h.EventID, h.Class, h.Quantity)
	if err != nil {
		return fmt.Errorf("claim GA tickets: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("claim GA tickets: %w", err)
	} else if n == 1 {
		return nil
	}
	var left int
	err = tx.QueryRowContext(ctx, s.DB.Rebind(`SELECT capacity - sold - held FROM ga_classes WHERE event_id = ? AND class_id = ?`),
		h.EventID, h.Class).Scan(&left)
	if errors.Is(err, sql.ErrNoRows) {
		return problem.InvalidField("class", "event %s has no general-admission class %s", h.EventID, h.Class)
	}
	if err != nil {
		return fmt.Errorf("read GA class: %w", err)
	}
	return problem.New(problem.Conflict, "only %d tickets of %s left", left, h.Class)
}

// ConfirmHold turns an active hold's tickets into sold ones and records hold.confirmed.
// account "" is a trusted service call; otherwise it must own the hold. Confirming a
// confirmed hold returns it unchanged; a hold past its expiry is expired on the spot (its
// seats back on sale at once) and answered Gone. The sale window is not checked again: a hold
// placed in time may be confirmed until it expires, or its order would fail after payment.
func (s *Store) ConfirmHold(ctx context.Context, id, account string) (Hold, error) {
	var h Hold
	var answer error // an answer that must not roll back what the transaction did
	var changed bool // the hold ended here, not before
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		answer, changed = nil, false
		var err error
		if h, err = s.lockHold(ctx, tx, id); err != nil {
			return err
		}
		if err := h.CheckOwner(account); err != nil {
			return err
		}
		now := s.Clock.Now()
		if h.Due(now) {
			answer, changed = h.CanConfirm(now), true
			return s.endHold(ctx, tx, &h, HoldExpired, now)
		}
		if err := h.CanConfirm(now); err != nil || h.Status == HoldConfirmed {
			return err
		}
		changed = true
		if err := s.setStatus(ctx, tx, &h, HoldConfirmed, now); err != nil {
			return err
		}
		if h.Class != "" {
			_, err = tx.ExecContext(ctx, s.DB.Rebind(`UPDATE ga_classes SET held = held - ?, sold = sold + ? WHERE event_id = ? AND class_id = ?`),
				h.Quantity, h.Quantity, h.EventID, h.Class)
		} else {
			err = expectRows(h.Quantity)(tx.ExecContext(ctx, s.DB.Rebind(`UPDATE seats SET status = 'sold'
				WHERE event_id = ? AND hold_id = ? AND status = 'held'`), h.EventID, h.ID))
		}
		if err != nil {
			return fmt.Errorf("sell tickets of %s: %w", h.ID, err)
		}
		return s.record(ctx, tx, verbConfirmed, h, now)
	})
	if err != nil {
		return Hold{}, err
	}
	if changed {
		s.committed()
		s.metrics.holdEnded(ctx, h)
	}
	if answer != nil {
		return Hold{}, answer
	}
	return h, nil
}

// ReleaseHold gives an active hold's tickets back and records hold.released. account ""
// is a trusted service call; otherwise it must own the hold. Releasing a released or
// expired hold returns it unchanged; a confirmed hold is a Conflict.
func (s *Store) ReleaseHold(ctx context.Context, id, account string) (Hold, error) {
	var h Hold
	var changed bool
	err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
		changed = false
		var err error
		if h, err = s.lockHold(ctx, tx, id); err != nil {
			return err
		}
		if err := h.CheckOwner(account); err != nil {
			return err
		}
		if err := h.CanRelease(); err != nil || h.Status != HoldActive {
			return err
		}
		changed = true
		return s.endHold(ctx, tx, &h, HoldReleased, s.Clock.Now())
	})
	if err != nil {
		return Hold{}, err
	}
	if changed {
		s.committed()
		s.metrics.holdEnded(ctx, h)
	}
	return h, nil
}

// ExpireDue expires up to limit active holds whose time has passed at Now, returning their
// tickets to sale, and reports how many it expired. Several sweepers (one per instance) may
// run at once: each hold is re-read under its row lock, so only one of them expires it.
func (s *Store) ExpireDue(ctx context.Context, limit int) (int, error) {
	rows, err := s.DB.QueryContext(ctx, s.DB.Rebind(`SELECT id FROM holds
		WHERE status = 'active' AND expires_ms <= ? ORDER BY expires_ms LIMIT ?`), s.Clock.Now().UnixMilli(), limit)
	if err != nil {
		return 0, fmt.Errorf("find due holds: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("find due holds: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("find due holds: %w", err)
	}
	expired := 0
	for _, id := range ids {
		var did bool
		err := s.DB.InTx(ctx, func(tx *sql.Tx) error {
			h, err := s.lockHold(ctx, tx, id)
			if err != nil {
				return err
			}
			now := s.Clock.Now()
			if did = h.Due(now); !did { // released, confirmed or expired by someone else meanwhile
				return nil
			}
			return s.endHold(ctx, tx, &h, HoldExpired, now)
		})
		if err != nil {
			return expired, fmt.Errorf("expire %s: %w", id, err)
		}
		if did {
			expired++
			s.metrics.holdEnded(ctx, Hold{Status: HoldExpired})
		}
	}
	if expired > 0 {
		s.committed()
	}
	return expired, nil
}

// endHold releases an active hold's tickets, sets its final status (released or expired)
// and records the matching event.
func (s *Store) endHold(ctx context.Context, tx *sql.Tx, h *Hold, to HoldStatus, now time.Time) error {
	if err := s.setStatus(ctx, tx, h, to, now); err != nil {
		return err
	}
	var err error
	if h.Class != "" {
		_, err = tx.ExecContext(ctx, s.DB.Rebind(`UPDATE ga_classes SET held = held - ? WHERE event_id = ? AND class_id = ?`),
			h.Quantity, h.EventID, h.Class)
	} else {
		err = expectRows(h.Quantity)(tx.ExecContext(ctx, s.DB.Rebind(`UPDATE seats SET status = 'available', hold_id = NULL
			WHERE event_id = ? AND hold_id = ? AND status = 'held'`), h.EventID, h.ID))
	}
	if err != nil {
		return fmt.Errorf("return tickets of %s: %w", h.ID, err)
	}
	verb := verbReleased
	if to == HoldExpired {
		verb = verbExpired
	}
	return s.record(ctx, tx, verb, *h, now)
}

// setStatus moves a locked active hold to status to.
func (s *Store) setStatus(ctx context.Context, tx *sql.Tx, h *Hold, to HoldStatus, now time.Time) error {
	err := expectRows(1)(tx.ExecContext(ctx, s.DB.Rebind(`UPDATE holds SET status = ?, updated_ms = ? WHERE id = ? AND status = 'active'`),
		to, now.UnixMilli(), h.ID))
	if err != nil {
		return fmt.Errorf("set %s %s: %w", h.ID, to, err)
	}
	h.Status = to
	return nil
}

// expectRows returns a check that a statement (its ExecContext results) changed exactly
// want rows. Under the hold's row lock anything else means the tables disagree with each
// other, which must never be committed.
func expectRows(want int) func(res sql.Result, err error) error {
	return func(res sql.Result, err error) error {
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if int(n) != want {
			return fmt.Errorf("changed %d rows, want %d", n, want)
		}
		return nil
	}
}

// lockHold reads hold id inside tx, locking its row on PostgreSQL until tx ends, so every
// change to one hold (confirm, release, expire, from any instance) happens one at a time.
func (s *Store) lockHold(ctx context.Context, tx *sql.Tx, id string) (Hold, error) {
	hs, err := s.readHolds(ctx, tx, `WHERE id = ?`+s.forUpdate(), id)
	if err != nil {
		return Hold{}, err
	}
	if len(hs) == 0 {
		return Hold{}, problem.New(problem.NotFound, "no hold %s", id)
	}
	return hs[0], nil
}

func (s *Store) committed() {
	if s.Committed != nil {
		s.Committed()
	}
}
