package sandbox

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// hostModule is the import module name of ABI v1's host functions. A future
// incompatible ABI gets a new module name (bardo_v2), so old plugins keep
// loading; compatible additions are new functions in the same module.
const hostModule = "bardo_v1"

// Limits on what a guest may hand the host in one host call: a plugin cannot
// make the host allocate without bound.
const (
	maxKeyLen   = 1 << 10
	maxValueLen = 16 << 20
	maxLogLen   = 8 << 10
	maxNameLen  = 128
)

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
	f64 = api.ValueTypeF64
)

type hostFunc struct {
	fn      api.GoModuleFunc
	params  []api.ValueType
	results []api.ValueType
}

// hostFunctions is ABI v1's import table (docs/abi.md). Stack-based Go
// functions avoid reflection on every call.
var hostFunctions = map[string]hostFunc{
	"log":       {hostLog, []api.ValueType{i32, i32, i32}, nil},
	"clock_now": {hostClockNow, nil, []api.ValueType{i64}},
	"kv_get":    {hostKVGet, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}},
	"kv_put":    {hostKVPut, []api.ValueType{i32, i32, i32, i32, i64}, []api.ValueType{i32}},
	"kv_delete": {hostKVDelete, []api.ValueType{i32, i32}, []api.ValueType{i32}},
	"config":    {hostConfig, []api.ValueType{i32, i32}, []api.ValueType{i64}},
	"metric":    {hostMetric, []api.ValueType{i32, i32, i32, f64}, nil},

	// Added in ABI v1.1 (additive).
	"kv_get_shared":    {hostKVGetShared, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}},
	"kv_put_shared":    {hostKVPutShared, []api.ValueType{i32, i32, i32, i32, i64}, []api.ValueType{i32}},
	"kv_delete_shared": {hostKVDeleteShared, []api.ValueType{i32, i32}, []api.ValueType{i32}},
	"hash":             {hostHash, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}},
	"regex_compile":    {hostRegexCompile, []api.ValueType{i32, i32}, []api.ValueType{i32}},
	"regex_find":       {hostRegexFind, []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i64}},

	// Added in ABI v1.2 (additive): the host's services (services.go).
	"embed":         service(svcEmbed),
	"classify":      service(svcClassify),
	"vector_insert": service(svcVectorInsert),
	"vector_search": service(svcVectorSearch),
	"vector_delete": service(svcVectorDelete),
	"complete":      service(svcComplete),

	// Added in ABI v1.3 (additive).
	"abi_minor": {hostABIMinor, nil, []api.ValueType{i32}},
}

// ABIMinor is the ABI minor version this host implements (docs/abi.md).
const ABIMinor = 8

// hostABIMinor answers abi_minor. A plugin that depends on a minor
// version's host behaviour (an adapter relying on VerifySuccess to refuse
// answers) imports it: an older host lacks the import and refuses to load
// the plugin, instead of silently ignoring what it does not know.

func instantiateHostModule(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(hostModule)
	for name, f := range hostFunctions {
		b.NewFunctionBuilder().WithGoModuleFunction(f.fn, f.params, f.results).Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

func state(ctx context.Context) *callState {
	cs, _ := ctx.Value(callKey{}).(*callState)
	if cs != nil && cs.run != nil {
		cs.p = cs.runEntry()
	}
	return cs
}

// readString copies guest memory; the bool is false when the range is outside
// memory or longer than limit.
func readBytes(m api.Module, ptr, n uint32, limit uint32) ([]byte, bool) {
	if n > limit {
		return nil, false
	}
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		return nil, false
	}
	return b, true
}

// namespacedKey prefixes a guest key with plugin and tenant, so plugins cannot
// read each other's data and tenants are isolated by construction. The tenant
// is length-prefixed: no tenant name, whatever bytes it holds, can forge
// another tenant's prefix. (Plugin names are [a-z0-9-]+.)
func namespacedKey(dst []byte, cs *callState, key []byte) []byte {
	return append(appendTenantPrefix(dst, cs.p.opts.Name, cs.info.Tenant), key...)
}

// TenantPrefix is the prefix of every kv key plugin (its name in
// pipeline.toml) stored for tenant: what an administrative flush of one
// tenant's entries deletes.
func TenantPrefix(plugin, tenant string) string {
	return string(appendTenantPrefix(nil, plugin, tenant))
}

func appendTenantPrefix(dst []byte, plugin, tenant string) []byte {
	dst = append(append(dst, plugin...), 0)
	dst = strconv.AppendInt(dst, int64(len(tenant)), 10)
	return append(append(dst, ':'), tenant...)
}

// lookupKey builds a kv key in the call's scratch buffer, for a Get or a
// Delete, which do not keep it (KV): no allocation per lookup.
func lookupKey(cs *callState, nsKey keyFunc, key []byte) string {
	cs.scratch = nsKey(cs.scratch[:0], cs, key)
	return unsafe.String(unsafe.SliceData(cs.scratch), len(cs.scratch))
}

// SharedPrefix is the prefix of every kv key in plugin's shared space.
func SharedPrefix(plugin string) string { return plugin + "\x00*" }

// PluginPrefix is the prefix of every kv key of plugin: each tenant's and
// the shared space. Plugin names cannot contain a zero byte, so no other
// plugin's keys share it.
func PluginPrefix(plugin string) string { return plugin + "\x00" }

func hostLog(ctx context.Context, m api.Module, stack []uint64) {
	cs := state(ctx)
	level, ptr, n := int32(stack[0]), uint32(stack[1]), uint32(stack[2])
	if n > maxLogLen {
		n = maxLogLen
	}
	msg, ok := m.Memory().Read(ptr, n)
	if !ok || cs == nil {
		return
	}
	lvl := slog.LevelInfo
	switch level {
	case 0:
		lvl = slog.LevelDebug
	case 2:
		lvl = slog.LevelWarn
	case 3:
		lvl = slog.LevelError
	}
	cs.p.log.Log(ctx, lvl, string(msg), "request_id", cs.info.RequestID)
}

func hostABIMinor(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = uint64(ABIMinor)
}

func hostClockNow(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = uint64(time.Now().UnixNano())
}

func hostKVGet(ctx context.Context, m api.Module, stack []uint64) {
	kvGet(ctx, m, stack, namespacedKey)
}

func hostKVGetShared(ctx context.Context, m api.Module, stack []uint64) {
	kvGet(ctx, m, stack, sharedKey)
}

func hostKVPut(ctx context.Context, m api.Module, stack []uint64) {
	kvPut(ctx, m, stack, namespacedKey)
}

func hostKVPutShared(ctx context.Context, m api.Module, stack []uint64) {
	kvPut(ctx, m, stack, sharedKey)
}

func hostKVDelete(ctx context.Context, m api.Module, stack []uint64) {
	kvDelete(ctx, m, stack, namespacedKey)
}

func hostKVDeleteShared(ctx context.Context, m api.Module, stack []uint64) {
	kvDelete(ctx, m, stack, sharedKey)
}

// sharedKey namespaces by plugin only: data every tenant of this plugin sees
// (an opt-in shared cache). The "\x00*" marker cannot collide with a tenant
// prefix, which always starts with a length.
func sharedKey(dst []byte, cs *callState, key []byte) []byte {
	return append(append(append(dst, cs.p.opts.Name...), 0, '*'), key...)
}

// keyFunc appends the namespaced form of a guest's key to dst.
type keyFunc func(dst []byte, cs *callState, key []byte) []byte

func kvGet(ctx context.Context, m api.Module, stack []uint64, nsKey keyFunc) {
	cs := state(ctx)
	kp, kn, bp, bc := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = math.MaxUint64 // -1: absent
	if cs == nil || cs.p.opts.KV == nil {
		return
	}
	key, ok := readBytes(m, kp, kn, maxKeyLen)
	if !ok {
		return
	}
	val, found := cs.p.opts.KV.Get(lookupKey(cs, nsKey, key))
	if !found {
		return
	}
	if uint32(len(val)) <= bc && !m.Memory().Write(bp, val) {
		return
	}
	stack[0] = uint64(len(val))
}

func kvPut(ctx context.Context, m api.Module, stack []uint64, nsKey keyFunc) {
	cs := state(ctx)
	kp, kn, vp, vn, ttl := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), int64(stack[4])
	stack[0] = 1
	if cs == nil || cs.p.opts.KV == nil || ttl < 0 {
		return
	}
	key, ok := readBytes(m, kp, kn, maxKeyLen)
	if !ok {
		return
	}
	val, ok := readBytes(m, vp, vn, maxValueLen)
	if !ok {
		return
	}
	// The store keeps the value beyond this call; guest memory does not last.
	if err := cs.p.opts.KV.Put(string(nsKey(cs.scratch[:0], cs, key)), append([]byte(nil), val...), time.Duration(ttl)*time.Millisecond); err != nil {
		cs.p.log.Warn("kv put failed", "err", err)
		return
	}
	stack[0] = 0
}

func kvDelete(ctx context.Context, m api.Module, stack []uint64, nsKey keyFunc) {
	cs := state(ctx)
	kp, kn := uint32(stack[0]), uint32(stack[1])
	stack[0] = 1
	if cs == nil || cs.p.opts.KV == nil {
		return
	}
	key, ok := readBytes(m, kp, kn, maxKeyLen)
	if !ok {
		return
	}
	if err := cs.p.opts.KV.Delete(lookupKey(cs, nsKey, key)); err != nil {
		cs.p.log.Warn("kv delete failed", "err", err)
		return
	}
	stack[0] = 0
}

func hostConfig(ctx context.Context, m api.Module, stack []uint64) {
	cs := state(ctx)
	bp, bc := uint32(stack[0]), uint32(stack[1])
	stack[0] = 0
	if cs == nil {
		return
	}
	cfg := cs.p.opts.Config
	if uint32(len(cfg)) <= bc && !m.Memory().Write(bp, cfg) {
		return
	}
	stack[0] = uint64(len(cfg))
}

func hostMetric(ctx context.Context, m api.Module, stack []uint64) {
	cs := state(ctx)
	kind, np, nn, v := int32(stack[0]), uint32(stack[1]), uint32(stack[2]), api.DecodeF64(stack[3])
	if cs == nil || cs.p.opts.Metrics == nil {
		return
	}
	name, ok := readBytes(m, np, nn, maxNameLen)
	if !ok || !validMetricName(name) {
		return
	}
	cs.p.opts.Metrics.PluginMetric(cs.p.opts.Name, int(kind), string(name), v)
}

// validMetricName keeps guest-chosen names inside Prometheus' grammar.
func validMetricName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Hash algorithms of the hash host function.
const hashSHA256 = 0

// maxHashLen bounds one hash call's input.
const maxHashLen = 64 << 20

// hostHash writes the SHA-256 of a guest byte range to outPtr (32 bytes).
// Natively it runs ~6× faster than the same code compiled into the guest.
func hostHash(_ context.Context, m api.Module, stack []uint64) {
	algo, dp, dn, op := int32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = 1
	if algo != hashSHA256 {
		return
	}
	data, ok := readBytes(m, dp, dn, maxHashLen)
	if !ok {
		return
	}
	// Copied into a view of guest memory: handed to Memory.Write, an
	// interface, the sum would be allocated on every call.
	dst, ok := m.Memory().Read(op, sha256.Size)
	if !ok {
		return
	}
	sum := sha256.Sum256(data)
	copy(dst, sum[:])
	stack[0] = 0
}
