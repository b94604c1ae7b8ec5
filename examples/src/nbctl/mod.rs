//! `ovn-nbctl`, re-made: the OVN Northbound database's command-line tool, with the real
//! tool's syntax and output (`ovn-nbctl(8)`), on top of [`crate::dbctl`].

pub mod acl;
pub mod addr;
pub mod lb;
pub mod nat;
pub mod policy;
pub mod router;
pub mod show;
pub mod switch;

use crate::dbctl::cli::Command;
use crate::dbctl::commands::{Ctx, RowId};
use crate::dbctl::{self, Tool};
use anyhow::Result;

/// Tables whose rows can be named by their `name` column in database commands.
const ROW_IDS: &[RowId] = &[
    RowId {
        table: "Logical_Switch",
        name_column: "name",
    },
    RowId {
        table: "Logical_Switch_Port",
        name_column: "name",
    },
    RowId {
        table: "Logical_Router",
        name_column: "name",
    },
    RowId {
        table: "Logical_Router_Port",
        name_column: "name",
    },
    RowId {
        table: "Address_Set",
        name_column: "name",
    },
    RowId {
        table: "Port_Group",
        name_column: "name",
    },
    RowId {
        table: "Load_Balancer",
        name_column: "name",
    },
    RowId {
        table: "Load_Balancer_Group",
        name_column: "name",
    },
    RowId {
        table: "Meter",
        name_column: "name",
    },
    RowId {
        table: "Gateway_Chassis",
        name_column: "name",
    },
    RowId {
        table: "HA_Chassis_Group",
        name_column: "name",
    },
    RowId {
        table: "Forwarding_Group",
        name_column: "name",
    },
    RowId {
        table: "Copp",
        name_column: "name",
    },
    RowId {
        table: "ACL",
        name_column: "name",
    },
    RowId {
        table: "Mirror",
        name_column: "name",
    },
];

fn dispatch(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    if cmd.name == "show" {
        show::show(ctx, cmd)?;
        return Ok(true);
    }
    if cmd.name == "init" || cmd.name == "sync" {
        return Ok(true);
    }
    Ok(switch::run(ctx, cmd)?
        || router::run(ctx, cmd)?
        || nat::run(ctx, cmd)?
        || lb::run(ctx, cmd)?
        || acl::run(ctx, cmd)?)
}

/// The tool description `main()` runs.
pub const TOOL: Tool = Tool {
    program: "ovn-nbctl",
    database: "OVN_Northbound",
    env_var: "OVN_NB_DB",
    default_remote: "unix:/var/run/ovn/ovnnb_db.sock",
    row_ids: ROW_IDS,
    dispatch,
};

/// Runs `ovn-nbctl` with `args` (without the program name); returns its standard output.
pub fn run(args: &[String]) -> Result<String> {
    dbctl::run(&TOOL, args)
}
