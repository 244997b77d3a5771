package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/services/auth"
	"boxoffice.dev/services/catalog"
	"boxoffice.dev/services/inventory"
)

// secrets are what every component of one `boxoffice up` must agree on. They are kept in the
// data dir so a restart keeps admission passes and admin sessions valid.
type secrets struct {
	waitroomSeed []byte // Ed25519 seed: the waitroom signs passes, inventory verifies them
	adminToken   string // bearer token of the gateway's admin API
}

func loadSecrets(dataDir string) (secrets, error) {
	seed, err := persisted(filepath.Join(dataDir, "waitroom.key"), func() ([]byte, error) {
		s := make([]byte, ed25519.SeedSize)
		_, err := rand.Read(s)
		return []byte(base64.StdEncoding.EncodeToString(s)), err
	})
	if err != nil {
		return secrets{}, err
	}
	raw, err := base64.StdEncoding.DecodeString(string(seed))
	if err != nil || len(raw) != ed25519.SeedSize {
		return secrets{}, fmt.Errorf("%s is not a base64 Ed25519 seed: delete it to get a new one", filepath.Join(dataDir, "waitroom.key"))
	}
	token, err := persisted(filepath.Join(dataDir, "admin.token"), func() ([]byte, error) {
		b := make([]byte, 24)
		_, err := rand.Read(b)
		return []byte(hex.EncodeToString(b)), err
	})
	if err != nil {
		return secrets{}, err
	}
	return secrets{waitroomSeed: raw, adminToken: string(token)}, nil
}

// persisted returns the file's contents, creating it with make() first when it is missing.
func persisted(path string, make func() ([]byte, error)) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return bytes.TrimSpace(b), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if b, err = make(); err != nil {
		return nil, fmt.Errorf("make %s: %w", path, err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return b, nil
}

func (s secrets) env() map[string]string {
	pub := ed25519.NewKeyFromSeed(s.waitroomSeed).Public().(ed25519.PublicKey)
	return map[string]string{
		"WAITROOM_SIGNING_KEY": base64.StdEncoding.EncodeToString(s.waitroomSeed),
		"WAITROOM_PUBLIC_KEY":  base64.StdEncoding.EncodeToString(pub),
		"ADMIN_TOKEN":          s.adminToken,
	}
}

// seedSeatMaps gives every demo event a seat map in inventory, built from the catalog's demo
// ticket classes. Catalog and auth seed themselves (SEED_DEMO); inventory does not import the
// catalog, so the one place that knows both translates. Seat maps that exist are left alone.
func seedSeatMaps(ctx context.Context, inventoryURL string) (int, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	seeded := 0
	for _, e := range catalog.DemoCatalog(time.Now()).Events {
		de := inventory.DemoEvent{EventID: e.ID, FlashSale: e.FlashSale}
		for _, c := range e.TicketClasses {
			de.Classes = append(de.Classes, inventory.DemoClass{ID: c.ID, Seated: c.Seated, Capacity: c.Capacity})
		}
		url := inventoryURL + "/v1/events/" + e.ID + "/seats"
		resp, err := client.Get(url)
		if err != nil {
			return seeded, fmt.Errorf("seat map of %s: %w", e.ID, err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			continue
		}
		body, _ := json.Marshal(inventory.DemoLayout(de))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, inventoryURL+"/v1/admin/events/"+e.ID+"/seatmap", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		identity.Identity{Tenant: "backstage", Plan: "internal"}.Set(req.Header)
		resp, err = client.Do(req)
		if err != nil {
			return seeded, fmt.Errorf("seed seat map of %s: %w", e.ID, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return seeded, fmt.Errorf("seed seat map of %s: %s", e.ID, resp.Status)
		}
		seeded++
	}
	return seeded, nil
}

// demoCredentials lists a few demo fans and every demo tenant's API key for endpoints.json.
func demoCredentials(demoSecret string) ([]User, []Partner) {
	var users []User
	for i := 1; i <= 5; i++ {
		users = append(users, User{Email: auth.DemoEmail(i), Password: auth.DemoPassword})
	}
	var partners []Partner
	for _, t := range auth.DemoTenants {
		partners = append(partners, Partner{Tenant: t.Name, Plan: string(t.Plan), APIKey: auth.DemoAPIKey(demoSecret, t.Name)})
	}
	return users, partners
}
