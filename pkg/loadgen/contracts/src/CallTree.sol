// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

// Contracts whose transactions have internal calls of every kind the
// tracers report, for the indexer's trace tests: not for production.

// Child is created by CallTree, called with value, and destroys itself.
contract Child {
    constructor() payable {}

    function ping() external payable returns (uint256) {
        return msg.value;
    }

    function boom() external pure {
        revert("boom");
    }

    function die(address payable to) external {
        selfdestruct(to);
    }
}

// Store is the target of CallTree's DELEGATECALL: its first slot is
// CallTree's first slot. set is payable because a DELEGATECALL keeps the
// caller's msg.value.
contract Store {
    uint256 public x;

    function set(uint256 v) external payable {
        x = v;
    }
}

contract CallTree {
    uint256 public x;
    Store public immutable store;

    constructor(Store s) {
        store = s;
    }

    // run makes, in one transaction: a CREATE with value, a CREATE2, a
    // CALL with value, a DELEGATECALL, a STATICCALL, a reverted CALL caught
    // (a failed frame with the reason "boom") and a SELFDESTRUCT of the
    // child created in the same transaction.
    function run(uint256 salt) external payable returns (address a, address b) {
        Child c1 = new Child{value: msg.value / 4}();
        Child c2 = new Child{salt: bytes32(salt)}();
        c1.ping{value: msg.value / 4}();
        (bool ok,) = address(store).delegatecall(abi.encodeCall(Store.set, (salt)));
        require(ok, "delegatecall failed");
        this.peek();
        try c2.boom() {} catch {}
        c1.die(payable(msg.sender));
        return (address(c1), address(c2));
    }

    function peek() external view returns (uint256) {
        return x;
    }

    // fail reverts the whole transaction: its top frame is failed.
    function fail() external pure {
        revert("always");
    }
}
