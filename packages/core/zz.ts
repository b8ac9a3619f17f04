import { createPlan, createToolkit } from '@cairn/core';

const plan = createPlan();
const tk = createToolkit(plan);
const big = {
  tasks: Array.from({ length: 200 }, (_, i) => ({
    title: `Task ${i} with a title`,
    steps: Array.from({ length: 200 }, (_, j) => `step ${j} of task ${i}`),
  })),
};
for (let k = 0; k < 3; k++) {
  const t = performance.now();
  const r: any = await tk.dispatch('add_tasks', big);
  console.log('200x200', (performance.now() - t).toFixed(1), 'ms', r.error?.message);
  const t2 = performance.now();
  const r2: any = await tk.dispatch('add_tasks', JSON.stringify(big));
  console.log('200x200 json', (performance.now() - t2).toFixed(1), 'ms', r2.error?.code);
}
console.log(plan.list().length);
