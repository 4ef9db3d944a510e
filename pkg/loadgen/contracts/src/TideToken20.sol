// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

// TideToken20 is OpenZeppelin's ERC-20 with minting and burning open to
// anyone: a test token for local chains only.
contract TideToken20 is ERC20 {
    constructor() ERC20("Tide Token", "TIDE") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function burn(address from, uint256 amount) external {
        _burn(from, amount);
    }
}
