package config

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
