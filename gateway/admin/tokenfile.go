package admin

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
)

// TokenFile is the file, under the data directory, where GenerateToken writes the token.
const TokenFile = "gateway-admin-token"

// GenerateToken makes a random token for Options.Token and writes it to dir/TokenFile, a
// file only its owner can read (mode 0600), creating dir if need be; it returns the token
// and the file's path. A deployment that sets no token still has one its operator can read,
// and it never appears in a log, where a credential would reach whoever reads the logs.
func GenerateToken(dir string) (token, path string, err error) {
	token = rand.Text()
	path = filepath.Join(dir, TokenFile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("admin token: %w", err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("admin token: %w", err)
	}
	return token, path, nil
}
