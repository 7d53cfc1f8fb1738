// Package sdktest holds the gateway's judges: tests that drive a complete
// in-process gateway (testgateway.Start, in front of the fake upstream) with
// the official client SDKs, the way real users do: openai-go and
// anthropic-sdk-go here, and the node SDKs (openai, @anthropic-ai/sdk) in
// wasm/sdk-test, run by TestNodeSDKs.
//
// Every direction is covered: OpenAI client to an OpenAI upstream (provider
// "up", models gpt-*) and to an Anthropic upstream (provider "claude",
// models claude-*), and the Anthropic client to both. What the SDKs parse,
// and what their own stream accumulators build, is the verdict; what the
// fake upstream received is checked in the upstream's own format.
//
// The package has no code outside its tests.
package sdktest
