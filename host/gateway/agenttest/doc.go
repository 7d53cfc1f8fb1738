// Package agenttest holds the gateway's hardest judges: real coding agents —
// Claude Code, opencode and Codex, installed from npm at pinned versions in
// tools/agents (`make agent-test-deps`) — driven non-interactively
// (`claude -p`, `opencode run`, `codex exec`) against an in-process gateway
// that serves the repository's own pipeline.toml (every shipped layer, the
// shipped providers with base URLs pointed at host/fakeupstream).
//
// Each agent runs with a scratch HOME and with HTTP(S)_PROXY pointed at a
// trap that refuses and records anything but 127.0.0.1: nothing reaches the
// network. A recording reverse proxy between the agent and the gateway keeps
// the exact bytes each client sent and the gateway's response headers, so
// the checks compare what the client sent with what the fake upstream got.
//
// The checks, per agent: a plain prompt; a tool round trip (the fake answers
// with the agent's own file-reading tool call, the agent reads a real file
// and sends its content back); thinking with a signature sent back byte for
// byte (Claude Code); Claude Code's default model (role "system" messages
// inside messages); the same prompt twice (the second served from the cache
// and streamed cleanly); two different prompts never answered with each
// other's answer; what reached the upstream equals what the client sent
// except for the layer edits documented in fidelity_test.go; no network.
//
// The tests skip only when the agents are not installed. See README.md.
//
// The package has no code outside its tests.
package agenttest
