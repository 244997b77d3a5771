package auth

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestPasswords(t *testing.T) {
	p, err := NewPasswords(bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := p.Hash("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if cost, _ := bcrypt.Cost([]byte(hash)); cost != bcrypt.MinCost {
		t.Errorf("Hash() cost = %d, want %d", cost, bcrypt.MinCost)
	}
	tests := []struct {
		name     string
		hash     string
		password string
		want     bool
		wantErr  bool
	}{
		{name: "right password", hash: hash, password: "correct horse", want: true},
		{name: "wrong password", hash: hash, password: "battery staple"},
		{name: "no account", hash: "", password: "correct horse"},
		{name: "no account, the dummy's own password", hash: "", password: "no account has this password"},
		{name: "corrupt hash", hash: "$2a$10$short", password: "x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Check(tt.hash, tt.password)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("Check(%q) = %v, %v, want %v, error %v", tt.password, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestPasswordsDefaultCost(t *testing.T) {
	p, err := NewPasswords(0)
	if err != nil {
		t.Fatal(err)
	}
	if cost, _ := bcrypt.Cost(p.dummy); cost != DefaultPasswordCost {
		t.Errorf("NewPasswords(0) dummy cost = %d, want %d", cost, DefaultPasswordCost)
	}
}
