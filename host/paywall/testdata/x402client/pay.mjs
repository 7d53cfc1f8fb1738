// The official x402 client pays the gateway: one POST /v1/messages through
// @x402/fetch's wrapFetchWithPayment, with @x402/evm's exact or upto
// scheme signing with X402_KEY. Run by host/paywall's TestOfficialClient;
// prints one JSON line: the final status, the decoded PAYMENT-RESPONSE (or
// v1's X-PAYMENT-RESPONSE) and the body.
//
// X402_SCHEME=exact-v1 is the client's x402 v1 mode (ExactEvmSchemeV1 on
// the v1 network "base"): the client reads a v1 402 from its JSON body
// only when no PAYMENT-REQUIRED header is present, so the fetch under it
// drops that header from 402s — what it sees is a v1 server's 402, the
// body alone — and it pays with X-PAYMENT.
import { wrapFetchWithPaymentFromConfig, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { privateKeyToAccount } from "viem/accounts";

const { GATEWAY_URL, X402_KEY, X402_SCHEME, X402_MODEL } = process.env;
const account = privateKeyToAccount(X402_KEY);
let schemes, base = fetch;
if (X402_SCHEME === "exact-v1") {
  schemes = [{ x402Version: 1, network: "base", client: new ExactEvmSchemeV1(account) }];
  base = async (input, init) => {
    const res = await fetch(input, init);
    if (res.status !== 402) return res;
    const headers = new Headers(res.headers);
    headers.delete("PAYMENT-REQUIRED");
    return new Response(await res.arrayBuffer(), { status: res.status, statusText: res.statusText, headers });
  };
} else {
  const client = X402_SCHEME === "upto" ? new UptoEvmScheme(account) : new ExactEvmScheme(account);
  schemes = [{ network: "eip155:8453", client }];
}
const pay = wrapFetchWithPaymentFromConfig(base, { schemes });

const res = await pay(GATEWAY_URL + "/v1/messages", {
  method: "POST",
  headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
  body: JSON.stringify({ model: X402_MODEL, max_tokens: 64, messages: [{ role: "user", content: "hello from @x402/fetch" }] }),
});
const header = res.headers.get("PAYMENT-RESPONSE") ?? res.headers.get("X-PAYMENT-RESPONSE");
console.log(JSON.stringify({
  status: res.status,
  paymentResponse: header ? decodePaymentResponseHeader(header) : null,
  body: await res.text(),
}));
