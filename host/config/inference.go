package config

import (
	"sort"

	"github.com/bardoinference/bardo/sdk/routing"
)

// The [inference] table: the operator's overrides of the subsystems'
// inference profiles (sdk/routing.Profiles):
//
//	[inference.profiles.heartbeat_t1]
//	temperature = 0.2
//	reasoning_effort = "medium"
//
// Each override's set fields win over the defaults. The locked profiles
// (risk, operator, death_reflect) are safety-critical: an override of one
// is not an error — the file still loads — but it is ignored, and the
// load says so (Config.Warnings).
func (c *checker) inference(v any, cfg *Config) {
	t, ok := v.(map[string]any)
	if !ok {
		c.errf("inference", "must be a table ([inference]), got %s", tomlType(v))
		return
	}
	c.unknownKeys(t, "inference", []string{"profiles"})
	pv, ok := t["profiles"]
	if !ok {
		return
	}
	profiles, ok := pv.(map[string]any)
	if !ok {
		c.errf("inference.profiles", "must be a table of tables ([inference.profiles.<subsystem>]), got %s", tomlType(pv))
		return
	}
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k := joinKey("inference.profiles", name)
		if routing.LookupProfile(name) == nil {
			c.errf(k, "unknown inference profile %q: want one of %s", name, profileNames())
			continue
		}
		m, ok := profiles[name].(map[string]any)
		if !ok {
			c.errf(k, "must be a table, got %s", tomlType(profiles[name]))
			continue
		}
		p, err := routing.ParseProfileOverride(m)
		if err != nil {
			c.errf(k, "%v", err)
			continue
		}
		if routing.ProfileLocked(name) {
			cfg.Warnings = append(cfg.Warnings, Problem{File: c.file, Line: c.line(k), Key: k,
				Msg: "inference profile " + name + " is locked (safety-critical): the override is ignored and the defaults are kept"}.String())
			continue
		}
		if cfg.Profiles == nil {
			cfg.Profiles = map[string]routing.InferenceProfile{}
		}
		cfg.Profiles[name] = p
	}
}

func profileNames() string {
	var s string
	for i := range routing.Profiles {
		if i > 0 {
			s += ", "
		}
		s += routing.Profiles[i].Name
	}
	return s
}

// Profile returns the inference profile a subsystem runs with: the
// defaults with this file's override laid over them (ok false: the
// subsystem has no profile).
func (cfg *Config) Profile(subsystem string) (routing.InferenceProfile, bool) {
	if o, ok := cfg.Profiles[subsystem]; ok {
		p, _ := routing.ConfiguredProfile(subsystem, &o)
		return p, true
	}
	return routing.DefaultProfile(subsystem)
}
