// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.37;

/// @title ERC6492Check
/// @notice A deployless signature check for smart-contract wallets. Sent as
/// the data of an eth_call without a `to` (a contract creation that never
/// lands on chain), followed by abi.encode(signer, hash, signature), its
/// constructor returns one 32-byte word: 1 when `signer` accepts `signature`
/// over `hash`, 0 when it does not.
///
/// A signature that ends in the ERC-6492 magic suffix is
/// abi.encode(factory, factoryCalldata, innerSignature) ++ magic. When
/// `signer` has no code yet (a counterfactual wallet), the constructor first
/// calls `factory` with `factoryCalldata` — the wallet's deployment — inside
/// the same simulated call, as ERC-6492 prescribes, then asks the wallet.
///
/// The wallet's answer (ERC-1271 `isValidSignature`) is judged as FiatToken
/// v2.2's SignatureChecker judges it: the call succeeds and its first
/// returned word is the selector 0x1626ba7e, zero-padded. A wallet accepted
/// here is thus one whose transferWithAuthorization settles. An address
/// without code is never accepted: an EOA's signature is checked by
/// ecrecover, off chain.
contract ERC6492Check {
    bytes32 private constant ERC6492_MAGIC = 0x6492649264926492649264926492649264926492649264926492649264926492;
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;

    constructor(address signer, bytes32 hash, bytes memory signature) {
        bool ok = check(signer, hash, signature);
        assembly {
            mstore(0, ok)
            return(0, 32)
        }
    }

    function check(address signer, bytes32 hash, bytes memory signature) private returns (bool) {
        if (signature.length >= 32) {
            bytes32 last;
            assembly {
                last := mload(add(signature, mload(signature)))
            }
            if (last == ERC6492_MAGIC) {
                // Drop the suffix in place: the rest is the ABI-encoded wrapper.
                assembly {
                    mstore(signature, sub(mload(signature), 32))
                }
                (address factory, bytes memory data, bytes memory inner) = abi.decode(signature, (address, bytes, bytes));
                if (signer.code.length == 0) {
                    (bool deployed, ) = factory.call(data);
                    if (!deployed) {
                        return false;
                    }
                }
                signature = inner;
            }
        }
        if (signer.code.length == 0) {
            return false;
        }
        (bool success, bytes memory result) = signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, hash, signature));
        return success && result.length >= 32 && abi.decode(result, (bytes32)) == bytes32(ERC1271_MAGIC);
    }
}
