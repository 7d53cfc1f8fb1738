// node-wasi.mjs — the WASI provider factory for PluginHost under node.
//
// Each instance needs its own WASI object (node's initialize() runs once per
// object). returnOnExit keeps a guest's proc_exit (a Go panic exits with code 2)
// from ending the node process: it surfaces as an exception, i.e. a trap.
import { WASI } from 'node:wasi';

/** @param {object} [options] extra node:wasi options, e.g. { stderr: fd } */
export const nodeWasi = (options = {}) => () =>
  new WASI({ version: 'preview1', args: [], env: {}, returnOnExit: true, ...options });
