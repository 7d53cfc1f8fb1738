// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.37;

/// @title WalletFactory
/// @notice A CREATE2 factory for the chain tests' counterfactual wallets
/// (ERC-6492): deploy(salt, initCode) puts initCode's contract at
/// keccak256(0xff ++ this ++ salt ++ keccak256(initCode))[12:], the address a
/// payer signs from before its wallet exists.
contract WalletFactory {
    event Deployed(address wallet);

    function deploy(bytes32 salt, bytes memory initCode) external returns (address wallet) {
        assembly {
            wallet := create2(0, add(initCode, 32), mload(initCode), salt)
        }
        require(wallet != address(0), "WalletFactory: deployment failed");
        emit Deployed(wallet);
    }
}
