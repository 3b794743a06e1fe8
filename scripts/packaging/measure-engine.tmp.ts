import { buildPackages } from './buildPackages.ts'
import { publicPackages } from './publicPackages.ts'
import { measurePackage } from './sizeBudget.ts'
const names = (process.argv[2] ?? '@tidemark/engine').split(',')
const pkgs = publicPackages().filter((p) => names.includes(p.name))
await buildPackages(pkgs)
for (const p of pkgs) console.log(JSON.stringify(await measurePackage(p, undefined)))
