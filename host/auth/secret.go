package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SecretEnv names the environment variable that, when set, holds the
// server secret instead of the data directory's file.
const SecretEnv = "BARDO_KEY_SECRET"

// SecretFile is the secret's file name in the data directory.
const SecretFile = "key_secret"

const minSecretLen = 32

// LoadSecret returns the server secret keys are hashed under: $BARDO_KEY_SECRET
// if set and not empty, else the data directory's key_secret file, created with 32 random
// bytes (hex) and mode 0600 on first use. Losing it invalidates every key;
// a file readable by group or others is refused.
func LoadSecret(dataDir string) ([]byte, error) {
	if v := os.Getenv(SecretEnv); v != "" {
		if len(v) < minSecretLen {
			return nil, fmt.Errorf("auth: %s must hold at least %d characters", SecretEnv, minSecretLen)
		}
		return []byte(v), nil
	}
	path := filepath.Join(dataDir, SecretFile)
	for range 2 {
		b, err := os.ReadFile(path)
		if err == nil {
			fi, err := os.Stat(path)
			if err != nil {
				return nil, err
			}
			if fi.Mode().Perm()&0o077 != 0 {
				return nil, fmt.Errorf("auth: %s is readable by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
			}
			s := strings.TrimSpace(string(b))
			if len(s) < minSecretLen {
				return nil, fmt.Errorf("auth: %s holds fewer than %d characters", path, minSecretLen)
			}
			return []byte(s), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err := createSecret(path); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		// Created by us or, concurrently, by another process: read it.
	}
	return nil, fmt.Errorf("auth: %s vanished while being created", path)
}

func createSecret(path string) error {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// Written to a temporary file and linked into place, so a concurrent
	// reader never sees a half-written secret and O_EXCL semantics hold.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".key_secret-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(hex.EncodeToString(raw) + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path) // fails with ErrExist if another process won
}
