package config

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/BurntSushi/toml"
)

// Storage holds the [storage] table: where the gateway keeps its durable
// state (accounts, keys, the ledger, usage; host/store).
type Storage struct {
	// Driver is the store implementation; only "sqlite" for now.
	Driver string
	// DataDir is the absolute data directory: the SQLite file and the
	// key-hashing secret live there.
	DataDir string
}

// Storage defaults.
const (
	DefaultStorageDriver = "sqlite"
	DefaultDataDir       = "data"
)

var storageKeys = []string{"driver", "data_dir"}

func (c *checker) storage(tree map[string]any) Storage {
	const p = "storage"
	s := Storage{Driver: DefaultStorageDriver}
	dataDir := DefaultDataDir
	if v, ok := tree[p]; ok {
		t, ok := v.(map[string]any)
		if !ok {
			c.errf(p, "must be a table ([storage]), got %s", tomlType(v))
			t = map[string]any{}
		}
		c.unknownKeys(t, p, storageKeys)
		if v, ok := c.str(t, p, "driver"); ok {
			if v != "sqlite" {
				c.errf(joinKey(p, "driver"), `must be "sqlite", got %q`, v)
			} else {
				s.Driver = v
			}
		}
		if v, ok := c.str(t, p, "data_dir"); ok {
			if v == "" {
				c.errf(joinKey(p, "data_dir"), "must not be empty")
			} else {
				dataDir = v
			}
		}
	}
	s.DataDir = c.abs(dataDir)
	return s
}

// LoadStorage reads only the [storage] table of the file at path, so the
// operator CLI (bardo accounts, bardo keys) finds the data directory on a
// machine where the plugins and models the rest of the file names are not
// built. A missing file yields the defaults relative to its directory.
func LoadStorage(path string) (Storage, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Storage{}, err
	}
	data, err := os.ReadFile(abs)
	if err != nil && !os.IsNotExist(err) {
		return Storage{}, err
	}
	var tree map[string]any
	if _, err := toml.Decode(string(data), &tree); err != nil {
		return Storage{}, syntaxError(path, data, err)
	}
	c := &checker{file: path, dir: filepath.Dir(abs), pos: locate(string(data))}
	s := c.storage(tree)
	if len(c.problems) > 0 {
		sort.SliceStable(c.problems, func(i, j int) bool { return c.problems[i].Line < c.problems[j].Line })
		return Storage{}, &ValidationError{Problems: c.problems}
	}
	return s, nil
}
