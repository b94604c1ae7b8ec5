//! `ovs-vsctl`, re-made: the Open_vSwitch database's command-line tool, with the real
//! tool's syntax and output (`ovs-vsctl(8)`), on top of [`crate::dbctl`]. It always
//! behaves as `ovs-vsctl --no-wait`: it never waits for ovs-vswitchd.

pub mod bridge;
pub mod show;

use crate::dbctl::cli::Command;
use crate::dbctl::commands::{Ctx, RowId};
use crate::dbctl::{self, Tool};
use anyhow::Result;

/// Tables whose rows can be named on the command line (`ovs-vsctl(8)` "Identifying
/// Tables, Records, and Columns").
const ROW_IDS: &[RowId] = &[
    RowId {
        table: "Bridge",
        name_column: "name",
    },
    RowId {
        table: "Port",
        name_column: "name",
    },
    RowId {
        table: "Interface",
        name_column: "name",
    },
    RowId {
        table: "Mirror",
        name_column: "name",
    },
    RowId {
        table: "Flow_Table",
        name_column: "name",
    },
    RowId {
        table: "Manager",
        name_column: "target",
    },
];

fn dispatch(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    if cmd.name == "show" {
        show::show(ctx, cmd)?;
        return Ok(true);
    }
    bridge::run(ctx, cmd)
}

/// The tool description `main()` runs.
pub const TOOL: Tool = Tool {
    program: "ovs-vsctl",
    database: "Open_vSwitch",
    env_var: "OVS_DB",
    default_remote: "unix:/var/run/openvswitch/db.sock",
    row_ids: ROW_IDS,
    dispatch,
};

/// Runs `ovs-vsctl` with `args` (without the program name); returns its standard output.
pub fn run(args: &[String]) -> Result<String> {
    dbctl::run(&TOOL, args)
}
