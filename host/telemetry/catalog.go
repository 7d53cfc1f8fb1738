package telemetry

// Desc declares one host metric. Every host metric is declared here, so each
// has HELP text and a fixed label set; README.md lists them with where they
// are emitted (keep the two in step: TestCatalogDocumented checks it).
type Desc struct {
	Name    string
	Type    string // counter, gauge or histogram
	Labels  []string
	Help    string
	Buckets []float64 // histogram; nil: Buckets
}

// Catalog is the host's metrics.
var Catalog = []Desc{
	{Name: "bardo_http_requests_total", Type: "counter", Labels: []string{"path", "code"},
		Help: "HTTP requests served, by route (unknown paths are \"other\") and status code."},
	{Name: "bardo_http_request_seconds", Type: "histogram", Labels: []string{"path"},
		Help: "Time from a request's arrival to its handler's return, by route; a stream's body is written after it."},
	{Name: "bardo_requests_total", Type: "counter", Labels: []string{"dialect", "endpoint", "code"},
		Help: "Inference requests, by the caller's dialect (openai, anthropic), endpoint and status code."},
	{Name: "bardo_provider_responses_total", Type: "counter", Labels: []string{"provider", "model", "code"},
		Help: "Inference responses naming the provider and model that served them (X-Bardo-Provider, X-Bardo-Model), by status code."},
	{Name: "bardo_failovers_total", Type: "counter", Labels: []string{"provider", "reason"},
		Help: "Failed provider attempts before a request's answer (X-Bardo-Fallback; a retry of the same provider is one more), by provider and why: its status code, or down when health skipped it."},
	{Name: "bardo_cache_stale_served_total", Type: "counter", Labels: nil,
		Help: "Stale cached answers served because every provider failed (the spec's bardo_cache_stale_served: alert when it grows)."},
	{Name: "bardo_cache_answers_total", Type: "counter", Labels: []string{"result"},
		Help: "Inference responses by the cache's verdict in X-Bardo-Cache (hash-hit, miss, stale, ...); responses without the header are not counted."},
	{Name: "bardo_cache_flushes_total", Type: "counter", Labels: []string{"layer", "scope"},
		Help: "Admin cache flushes (POST /admin/cache/flush), by layer and scope."},
	{Name: "bardo_cache_invalidations_total", Type: "counter", Labels: []string{"layer"},
		Help: "Cache entries deleted by admin flushes, by layer."},
	{Name: "bardo_regime_changes_total", Type: "counter", Labels: []string{"regime"},
		Help: "Admin regime changes (POST /admin/regime), by the regime set."},
	{Name: "bardo_catalog_refreshes_total", Type: "counter", Labels: []string{"provider", "result"},
		Help: "Provider model-catalog refreshes, by provider and result (ok, error)."},
	{Name: "bardo_provider_health_changes_total", Type: "counter", Labels: []string{"provider", "to"},
		Help: "Provider health state changes, by provider and the state entered."},
	{Name: "bardo_layer_skips_total", Type: "counter", Labels: []string{"layer"},
		Help: "Layers skipped by their fail-open policy after failing (layer-skipped in X-Bardo-Degraded), by layer."},
	{Name: "bardo_sandbox_call_seconds", Type: "histogram", Labels: []string{"plugin", "op"},
		Help: "Plugin call latency (the guest's run, not the wait for an instance), by plugin and export."},
	{Name: "bardo_sandbox_call_failures_total", Type: "counter", Labels: []string{"plugin", "op", "kind"},
		Help: "Failed plugin calls, by plugin, export and kind: error (reported by the plugin), trap, timeout, canceled."},
	{Name: "bardo_sandbox_pool_size", Type: "gauge", Labels: []string{"plugin"},
		Help: "Instances a plugin may run at once (its pool_size)."},
	{Name: "bardo_sandbox_pool_waits_total", Type: "counter", Labels: []string{"plugin"},
		Help: "Plugin calls that found every instance busy and queued for one."},
	{Name: "bardo_sandbox_instances_created_total", Type: "counter", Labels: []string{"plugin"},
		Help: "Plugin instances created (at load, on demand up to pool_size, and after a discard)."},
	{Name: "bardo_sandbox_instances_discarded_total", Type: "counter", Labels: []string{"plugin"},
		Help: "Plugin instances discarded: after a trap or an interrupted call, a failed init, or at close."},
	{Name: "bardo_sandbox_instances_shrunk_total", Type: "counter", Labels: []string{"plugin"},
		Help: "Idle plugin instances closed, or replaced by a fresh one after their memory grew, when the gateway went idle."},
	{Name: "bardo_memory_releases_total", Type: "counter", Labels: []string{"reason"},
		Help: "Times the gateway shrank its plugin pools and returned freed memory to the operating system, by reason: load (the pipeline was loaded or reloaded) or idle (traffic stopped)."},
	{Name: "bardo_tokens_total", Type: "counter", Labels: []string{"provider", "model", "kind"},
		Help: "Tokens of upstream answers as the provider reported them, by provider, model and kind (input, output, cache_read, cache_write); cache hits' replayed usage is not counted."},
	{Name: "bardo_cost_usd_total", Type: "counter", Labels: []string{"provider", "model"},
		Help: "What providers billed for the answers of billed requests (their internal completions included), in USD, by the provider and model that answered."},
	{Name: "bardo_charge_usd_total", Type: "counter", Labels: []string{"provider", "model"},
		Help: "What callers were charged (X-Bardo-Cost: cost plus the tier's spread), in USD, by provider and model; the ledger holds the exact amounts."},
	{Name: "bardo_direct_cost_usd_total", Type: "counter", Labels: []string{"provider", "model"},
		Help: "What billed requests would have cost sent straight to the provider without the gateway's optimizations, in USD, by provider and model: savings (X-Bardo-Savings) = this - bardo_charge_usd_total."},
	{Name: "bardo_account_spend_usd_total", Type: "counter", Labels: []string{"account"},
		Help: "Charges per account, in USD (account ids, bounded by the registry's label-set cap)."},
	{Name: "bardo_key_spend_usd_total", Type: "counter", Labels: []string{"key"},
		Help: "Charges per API key, by the key's public id (never the secret), in USD."},
	{Name: "bardo_first_byte_seconds", Type: "histogram", Labels: []string{"provider", "model"},
		Help: "Streams: time from a request's arrival until the first byte of its answer went to the caller (time to first token, as the caller sees it), by the provider and model that answered."},
	{Name: "bardo_upstream_seconds", Type: "histogram", Labels: []string{"provider", "model"},
		Help: "Time a request spent waiting on upstream attempts, failed ones included (a buffered answer: until its body was read; a stream: until its first event), by the provider and model that answered."},
	{Name: "bardo_overhead_seconds", Type: "histogram", Labels: []string{"path"},
		Help: "The gateway's own time in a request answered upstream: until its first byte (a stream) or its whole answer (buffered), less the time waiting on upstreams; by path (upstream, passthrough)."},
	{Name: "bardo_answer_seconds", Type: "histogram", Labels: []string{"provider", "model", "path"},
		Help: "Time from a request's arrival to its answer fully written (a stream: its end), for answers a provider or layer gave, by provider, model and path (upstream, passthrough, layer, local, stale, internal)."},
	{Name: "bardo_errors_total", Type: "counter", Labels: []string{"kind", "provider"},
		Help: "Requests that ended in an error, by canonical kind (rate_limit, upstream, timeout, ...) and the provider whose error it was (empty: the gateway's own)."},
	{Name: "bardo_streams_total", Type: "counter", Labels: []string{"end"},
		Help: "Streamed answers by how they ended: ended, broken (an error event ended it) or client_gone."},
	{Name: "bardo_internal_completions_total", Type: "counter", Labels: []string{"provider", "code"},
		Help: "Layers' internal completions (the complete host function), by provider and status code."},
}
