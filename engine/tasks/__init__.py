"""The four collaborative tasks of seed 000 Sec. 5.1 and the persona-recasting controller."""
