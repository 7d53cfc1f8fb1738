// The official x402 client pays the gateway: one POST /v1/messages through
// @x402/fetch's wrapFetchWithPayment, with @x402/evm's exact or upto
// scheme signing with X402_KEY. Run by host/paywall's TestOfficialClient;
// prints one JSON line: the final status, the decoded PAYMENT-RESPONSE and
// the body.
import { wrapFetchWithPaymentFromConfig, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { privateKeyToAccount } from "viem/accounts";

const { GATEWAY_URL, X402_KEY, X402_SCHEME, X402_MODEL } = process.env;
const account = privateKeyToAccount(X402_KEY);
const client = X402_SCHEME === "upto" ? new UptoEvmScheme(account) : new ExactEvmScheme(account);
const pay = wrapFetchWithPaymentFromConfig(fetch, { schemes: [{ network: "eip155:8453", client }] });

const res = await pay(GATEWAY_URL + "/v1/messages", {
  method: "POST",
  headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
  body: JSON.stringify({ model: X402_MODEL, max_tokens: 64, messages: [{ role: "user", content: "hello from @x402/fetch" }] }),
});
const header = res.headers.get("PAYMENT-RESPONSE");
console.log(JSON.stringify({
  status: res.status,
  paymentResponse: header ? decodePaymentResponseHeader(header) : null,
  body: await res.text(),
}));
