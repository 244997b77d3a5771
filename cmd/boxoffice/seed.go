package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"boxoffice.dev/services/auth"
	"boxoffice.dev/services/catalog"
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

// waitForSeatMaps waits until every inventory instance serves the flash-sale demo event's
// seat map, or within passes. Nobody seeds seat maps: the catalog seeds the demo and
// announces each event, and inventory lays out a map for each (inventory.SeatMapper), as in every run
// mode; `up` only waits for that before saying it is up. The flash sale is the last event
// the catalog seeds, so its map comes last, or nearly: replicas share the work.
func waitForSeatMaps(ctx context.Context, inventoryURLs []string, within time.Duration) error {
	urls := make([]string, len(inventoryURLs))
	for i, u := range inventoryURLs {
		urls[i] = u + "/v1/events/" + catalog.DemoFlashSaleID + "/seats"
	}
	if err := waitOK(ctx, urls, within); err != nil {
		return fmt.Errorf("demo seat maps: %w", err)
	}
	return nil
}

// demoCredentials lists a few demo fans and every demo tenant's API key for endpoints.json.
func demoCredentials(demoSecret string) ([]User, []Partner) {
	var users []User
	for i := 1; i <= 5; i++ {
		users = append(users, User{Email: auth.DemoEmail(i), Password: auth.DemoPassword})
	}
	var partners []Partner
	for _, t := range auth.DemoTenants {
		partners = append(partners, Partner{Tenant: t.Name, TenantID: auth.DemoTenantID(t.Name), Plan: string(t.Plan), APIKey: auth.DemoAPIKey(demoSecret, t.Name)})
	}
	return users, partners
}
