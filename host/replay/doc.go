// Package replay holds the priced session replays (its tests): recorded
// agent sessions sent to the fake upstream directly and through the
// gateway, each call priced by the providers' prompt-caching rules. See
// README.md.
package replay
