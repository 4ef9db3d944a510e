// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

// Tokens as found on real chains that do not follow the letter of ERC-20,
// for the indexer's metadata and transfer decoding: not for production.

// Bytes32Token answers name() and symbol() as bytes32 (as MKR and SAI do)
// and keeps 6 decimals.
contract Bytes32Token {
    bytes32 public constant name = "Old Style";
    bytes32 public constant symbol = "OLD";
    uint8 public constant decimals = 6;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;

    event Transfer(address indexed from, address indexed to, uint256 value);

    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        balanceOf[msg.sender] -= amount;
        balanceOf[to] += amount;
        emit Transfer(msg.sender, to, amount);
        return true;
    }
}

// SilentToken emits ERC-20 Transfer events and has no metadata at all: no
// name(), symbol(), decimals() or totalSupply().
contract SilentToken {
    mapping(address => uint256) public balances;

    event Transfer(address indexed from, address indexed to, uint256 value);

    function mint(address to, uint256 amount) external {
        balances[to] += amount;
        emit Transfer(address(0), to, amount);
    }
}

// NotATransfer emits events with Transfer's signature that are not
// transfers of any standard: the value unindexed but the data empty, and
// one indexed topic too many for ERC-721. Decoders must skip them.
contract NotATransfer {
    event Transfer(address indexed from, address indexed to, uint256 indexed id, uint256 extra);

    function emitOdd(address to) external {
        bytes32 sig = keccak256("Transfer(address,address,uint256)");
        bytes32 from = bytes32(uint256(uint160(msg.sender)));
        bytes32 dest = bytes32(uint256(uint160(to)));
        assembly {
            // Three topics and no data: neither ERC-20 nor ERC-721.
            log3(0, 0, sig, from, dest)
            // Three topics and 64 bytes of data: too long for ERC-20.
            mstore(0, 7)
            mstore(32, 8)
            log3(0, 64, sig, from, dest)
        }
    }
}
