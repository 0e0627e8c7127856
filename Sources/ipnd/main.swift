import IPNCommands

await IPNDCommand.runMain()
