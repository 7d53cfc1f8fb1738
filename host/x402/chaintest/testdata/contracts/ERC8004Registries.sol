// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

// Minimal ERC-8004 ("Trustless Agents") Identity and Reputation registries
// for the gateway's chain tests. They implement the functions of the ERC's
// interfaces the gateway reads, with the reference contracts' semantics
// (github.com/erc-8004/erc-8004-contracts b9e466c: IdentityRegistryUpgradeable,
// ReputationRegistryUpgradeable), written here because the reference is
// UUPS-upgradeable over OpenZeppelin, which is not installed here, and its
// repository carries no license file. Not for deployment: ownership checks
// are the minimum a test needs.

/// IdentityRegistry: agent ids are ERC-721 token ids; the owner and the
/// agentWallet (initially the owner, cleared on transfer) are readable.
contract IdentityRegistry {
    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);

    uint256 private _lastId;
    mapping(uint256 => address) private _owners;
    mapping(uint256 => address) private _wallets;
    mapping(uint256 => string) private _uris;

    function register(string calldata agentURI) external returns (uint256 agentId) {
        agentId = _lastId++;
        _owners[agentId] = msg.sender;
        _wallets[agentId] = msg.sender;
        _uris[agentId] = agentURI;
        emit Transfer(address(0), msg.sender, agentId);
        emit Registered(agentId, agentURI, msg.sender);
    }

    function ownerOf(uint256 agentId) public view returns (address owner) {
        owner = _owners[agentId];
        require(owner != address(0), "ERC721NonexistentToken");
    }

    function tokenURI(uint256 agentId) external view returns (string memory) {
        ownerOf(agentId);
        return _uris[agentId];
    }

    function transferFrom(address from, address to, uint256 agentId) external {
        require(ownerOf(agentId) == from && msg.sender == from && to != address(0), "not owner");
        _owners[agentId] = to;
        delete _wallets[agentId]; // the ERC: cleared on transfer
        emit Transfer(from, to, agentId);
    }

    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool) {
        return ownerOf(agentId) == spender;
    }

    function getAgentWallet(uint256 agentId) external view returns (address) {
        ownerOf(agentId);
        return _wallets[agentId];
    }

    // The ERC has the new wallet prove itself with an EIP-712/ERC-1271
    // signature; this test registry takes the owner's word for it.
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata) external {
        require(msg.sender == ownerOf(agentId) && block.timestamp <= deadline, "not owner or expired");
        _wallets[agentId] = newWallet;
    }

    function unsetAgentWallet(uint256 agentId) external {
        require(msg.sender == ownerOf(agentId), "not owner");
        delete _wallets[agentId];
    }
}

interface IIdentity {
    function isAuthorizedOrOwner(address spender, uint256 agentId) external view returns (bool);
}

/// ReputationRegistry: feedback is (value, valueDecimals, tag1, tag2) per
/// client and 1-based index; getSummary averages the unrevoked feedback of
/// the given clients matching the tags, at the most frequent decimals.
contract ReputationRegistry {
    event NewFeedback(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, int128 value,
        uint8 valueDecimals, string indexed indexedTag1, string tag1, string tag2, string endpoint, string feedbackURI,
        bytes32 feedbackHash);
    event FeedbackRevoked(uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex);

    struct Feedback {
        int128 value;
        uint8 valueDecimals;
        bool isRevoked;
        string tag1;
        string tag2;
    }

    int128 private constant MAX_ABS_VALUE = 1e38;
    address private immutable _identityRegistry;
    mapping(uint256 => mapping(address => mapping(uint64 => Feedback))) private _feedback;
    mapping(uint256 => mapping(address => uint64)) private _lastIndex;
    mapping(uint256 => address[]) private _clients;
    mapping(uint256 => mapping(address => bool)) private _clientExists;

    constructor(address identityRegistry_) {
        _identityRegistry = identityRegistry_;
    }

    function getIdentityRegistry() external view returns (address) {
        return _identityRegistry;
    }

    function giveFeedback(uint256 agentId, int128 value, uint8 valueDecimals, string calldata tag1,
        string calldata tag2, string calldata endpoint, string calldata feedbackURI, bytes32 feedbackHash) external {
        require(valueDecimals <= 18, "too many decimals");
        require(value >= -MAX_ABS_VALUE && value <= MAX_ABS_VALUE, "value too large");
        require(!IIdentity(_identityRegistry).isAuthorizedOrOwner(msg.sender, agentId), "Self-feedback not allowed");
        uint64 idx = ++_lastIndex[agentId][msg.sender];
        _feedback[agentId][msg.sender][idx] = Feedback(value, valueDecimals, false, tag1, tag2);
        if (!_clientExists[agentId][msg.sender]) {
            _clients[agentId].push(msg.sender);
            _clientExists[agentId][msg.sender] = true;
        }
        emit NewFeedback(agentId, msg.sender, idx, value, valueDecimals, tag1, tag1, tag2, endpoint, feedbackURI, feedbackHash);
    }

    function revokeFeedback(uint256 agentId, uint64 feedbackIndex) external {
        require(feedbackIndex > 0 && feedbackIndex <= _lastIndex[agentId][msg.sender], "index out of bounds");
        require(!_feedback[agentId][msg.sender][feedbackIndex].isRevoked, "Already revoked");
        _feedback[agentId][msg.sender][feedbackIndex].isRevoked = true;
        emit FeedbackRevoked(agentId, msg.sender, feedbackIndex);
    }

    function getLastIndex(uint256 agentId, address clientAddress) external view returns (uint64) {
        return _lastIndex[agentId][clientAddress];
    }

    function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex) external view
        returns (int128 value, uint8 valueDecimals, string memory tag1, string memory tag2, bool isRevoked) {
        require(feedbackIndex > 0 && feedbackIndex <= _lastIndex[agentId][clientAddress], "index out of bounds");
        Feedback storage f = _feedback[agentId][clientAddress][feedbackIndex];
        return (f.value, f.valueDecimals, f.tag1, f.tag2, f.isRevoked);
    }

    function getClients(uint256 agentId) external view returns (address[] memory) {
        return _clients[agentId];
    }

    function getSummary(uint256 agentId, address[] calldata clientAddresses, string calldata tag1,
        string calldata tag2) external view returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals) {
        require(clientAddresses.length > 0, "clientAddresses required");
        bytes32 emptyHash = keccak256(bytes(""));
        bytes32 tag1Hash = keccak256(bytes(tag1));
        bytes32 tag2Hash = keccak256(bytes(tag2));
        int256 sum;
        uint64[19] memory decimalCounts;
        for (uint256 i; i < clientAddresses.length; i++) {
            uint64 lastIdx = _lastIndex[agentId][clientAddresses[i]];
            for (uint64 j = 1; j <= lastIdx; j++) {
                Feedback storage fb = _feedback[agentId][clientAddresses[i]][j];
                if (fb.isRevoked) continue;
                if (emptyHash != tag1Hash && tag1Hash != keccak256(bytes(fb.tag1))) continue;
                if (emptyHash != tag2Hash && tag2Hash != keccak256(bytes(fb.tag2))) continue;
                sum += int256(fb.value) * int256(10 ** uint256(18 - fb.valueDecimals));
                decimalCounts[fb.valueDecimals]++;
                count++;
            }
        }
        if (count == 0) return (0, 0, 0);
        uint8 modeDecimals;
        uint64 maxCount;
        for (uint8 d; d <= 18; d++) {
            if (decimalCounts[d] > maxCount) {
                maxCount = decimalCounts[d];
                modeDecimals = d;
            }
        }
        int256 avgWad = sum / int256(uint256(count));
        summaryValue = int128(avgWad / int256(10 ** uint256(18 - modeDecimals)));
        summaryValueDecimals = modeDecimals;
    }
}
